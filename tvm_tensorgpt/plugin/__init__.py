"""MetaSchedule integration: the "tensorgpt" strategy, space generator and builder."""

from .builder import build_module, local_builder
from .generator import Generator, PriorGenerator, Proposal
from .registration import register, use_tensorgpt_in_relax_pipeline
from .space import TensorGPTSpaceGenerator
from .strategy import TaskStats, TensorGPTSearchStrategy, TuningStats
from .target import TargetError, host_target, parse_target

__all__ = [
    "Generator",
    "PriorGenerator",
    "Proposal",
    "TargetError",
    "TaskStats",
    "TensorGPTSearchStrategy",
    "TensorGPTSpaceGenerator",
    "TuningStats",
    "build_module",
    "host_target",
    "local_builder",
    "parse_target",
    "register",
    "use_tensorgpt_in_relax_pipeline",
]
