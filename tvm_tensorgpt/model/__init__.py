"""The generator network: a small decoder over the schedule language with hardware grounding."""

from .batch import Example, collate
from .config import ModelConfig
from .generate import SamplingConfig, sample_decisions
from .network import HardwarePrefix, TensorGPTNetwork
from .score import legal_token_probabilities

__all__ = ["Example", "HardwarePrefix", "ModelConfig", "SamplingConfig", "TensorGPTNetwork", "collate",
           "legal_token_probabilities", "sample_decisions"]
