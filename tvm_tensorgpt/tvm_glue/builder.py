"""A LocalBuilder that works out of the box on small machines.

The stock ``LocalBuilder`` starts fresh worker processes for every batch and its default build
function imports ``tvm.s_tir.tensor_intrin`` (17-50 s here, every backend's intrinsics) inside a
30 s timeout, so builds time out. Building a scheduled module does not need those registrations —
tensorized code already holds the intrinsic bodies — so ``build_module`` is the stock build without
that import. ``Builder.create("tensorgpt")`` and the plugin's tuning paths use it.
"""

from __future__ import annotations

from tvm.ir import IRModule
from tvm.runtime import Module
from tvm.s_tir.meta_schedule.builder import LocalBuilder
from tvm.target import Target

DEFAULT_TIMEOUT_S = 60.0


def build_module(mod: IRModule, target: Target, params: dict | None) -> Module:
    """``default_build`` without importing every backend's tensor intrinsics."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    if params:
        raise ValueError("build_module does not bind params; MetaSchedule tasks have none")
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def local_builder(max_workers: int | None = None, timeout_sec: float = DEFAULT_TIMEOUT_S) -> LocalBuilder:
    """A LocalBuilder using ``build_module``; pass it as ``builder=`` to any MetaSchedule tune."""
    return LocalBuilder(max_workers=max_workers, timeout_sec=timeout_sec, f_build=build_module)
