"""Load only the tensor intrinsics a target needs.

MetaSchedule imports ``tvm.s_tir.tensor_intrin`` on every TuneContext; that package registers the
intrinsics of every backend, the CUDA ones alone taking most of 17-50 s here. The rules of a target
only look up their own backend's intrinsics, so for a tune in this process we register the package
without running its ``__init__`` and import just the backend modules the target's kind needs.
Call ``load_tensor_intrinsics`` for every target the process tunes (the plugin does this for you).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

from tvm.target import Target

PACKAGE = "tvm.s_tir.tensor_intrin"
# Backend modules whose intrinsics each target kind's schedule rules may use.
_MODULES_BY_KIND = {
    "llvm": ("x86", "arm_cpu", "riscv_cpu"),
    "cuda": ("cuda",),
    "rocm": ("rocm",),
    "metal": ("metal",),
    "hexagon": ("hexagon",),
}


def _install_lazy_package() -> None:
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return
    package = types.ModuleType(PACKAGE)
    package.__spec__ = spec
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__package__ = PACKAGE
    sys.modules[PACKAGE] = package
    setattr(importlib.import_module("tvm.s_tir"), "tensor_intrin", package)


def load_tensor_intrinsics(target: Target) -> None:
    """Register the intrinsics ``target`` can use, skipping every other backend's."""
    _install_lazy_package()
    for name in _MODULES_BY_KIND.get(target.kind.name, ()):
        importlib.import_module(f"{PACKAGE}.{name}")
