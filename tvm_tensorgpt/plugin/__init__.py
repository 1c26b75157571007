"""MetaSchedule integration: the "tensorgpt" strategy, space generator and builder names, and the
plugin's own tuning paths (``plugin.tune``)."""

from .registration import STRATEGIES, register, use_tensorgpt_in_relax_pipeline
from .space import TensorGPTSpaceGenerator
from .strategy import SearchConfig, TaskStats, TensorGPTSearchStrategy, TuningStats

__all__ = [
    "STRATEGIES",
    "SearchConfig",
    "TaskStats",
    "TensorGPTSearchStrategy",
    "TensorGPTSpaceGenerator",
    "TuningStats",
    "register",
    "use_tensorgpt_in_relax_pipeline",
]
