"""The bottom layer: TVM glue every other layer needs, and nothing of ours.

Targets as TVM 0.27 wants them, loading only a target's tensor intrinsics, a builder that works
on small machines, design spaces with their postprocessors, the CUDA compile check, the error
types TVM raises, and JSON databases repaired after a kill with records matched to their device.
"""

from .builder import build_module, local_builder
from .database import DB_FILES, device_key, repair_database, same_device
from .errors import TVM_ERRORS
from .intrinsics import load_tensor_intrinsics
from .latency import mean_latency
from .space import design_spaces, mutate, resolved_mutators, resolved_postprocs
from .target import TargetError, TargetLike, host_target, parse_target

__all__ = [
    "DB_FILES",
    "TVM_ERRORS",
    "TargetError",
    "TargetLike",
    "build_module",
    "design_spaces",
    "device_key",
    "host_target",
    "load_tensor_intrinsics",
    "local_builder",
    "mean_latency",
    "mutate",
    "parse_target",
    "repair_database",
    "resolved_mutators",
    "resolved_postprocs",
    "same_device",
]
