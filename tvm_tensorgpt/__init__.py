"""TensorGPT for TVM MetaSchedule.

``import tvm_tensorgpt`` registers ``"tensorgpt"`` as a MetaSchedule search strategy, space
generator and builder name, so ``ms.tune_tir(..., strategy="tensorgpt", space="tensorgpt",
builder="tensorgpt")`` and the relax flow use it. Nothing here imports the model stack (torch,
transformers) at import time: builder worker processes import this package too.
"""

from .generators import Generator, PriorGenerator
from .plugin import (
    SearchConfig,
    TensorGPTSearchStrategy,
    TensorGPTSpaceGenerator,
    TuningStats,
    register,
    use_tensorgpt_in_relax_pipeline,
)
from .plugin.tune import tune_torch
from .tvm_glue import local_builder, parse_target

__version__ = "0.1.0"

register()

__all__ = [
    "Generator",
    "PriorGenerator",
    "SearchConfig",
    "TensorGPTSearchStrategy",
    "TensorGPTSpaceGenerator",
    "TuningStats",
    "local_builder",
    "parse_target",
    "register",
    "tune_torch",
    "use_tensorgpt_in_relax_pipeline",
]
