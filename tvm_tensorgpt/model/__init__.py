"""The generator network: a small decoder over the schedule language with hardware grounding."""

from .config import ModelConfig
from .generate import SamplingConfig, sample_decisions
from .network import HardwarePrefix, TensorGPTNetwork

__all__ = ["HardwarePrefix", "ModelConfig", "SamplingConfig", "TensorGPTNetwork", "sample_decisions"]
