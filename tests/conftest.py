"""Shared fixtures: a CPU target, design spaces of the built-in workloads (computed once)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TVM_NUM_THREADS", "1")

import tvm  # noqa: E402
import tvm_tensorgpt  # noqa: E402,F401  (registers "tensorgpt")
from tvm.s_tir import meta_schedule as ms  # noqa: E402
from tvm_tensorgpt.language import Sketch  # noqa: E402
from tvm_tensorgpt.plugin.intrinsics import load_tensor_intrinsics  # noqa: E402
from tvm_tensorgpt.workloads import get_workload  # noqa: E402

LLVM = {"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2}
LANGUAGE_WORKLOADS = ["matmul-128", "conv2d-resnet", "depthwise-mobilenet", "softmax-bert", "layernorm-bert"]


@pytest.fixture(scope="session")
def llvm_target() -> tvm.target.Target:
    target = tvm.target.Target(LLVM)
    load_tensor_intrinsics(target)
    return target


def make_context(mod: tvm.IRModule, target: tvm.target.Target, strategy="replay-trace") -> ms.TuneContext:
    return ms.TuneContext(
        mod=mod,
        target=target,
        space_generator="tensorgpt",
        search_strategy=strategy,
        num_threads=1,
        rand_state=1,
    )


@pytest.fixture(scope="session")
def task_spaces(llvm_target):
    """workload name -> (TuneContext, design spaces, sketches)."""
    out = {}
    for name in LANGUAGE_WORKLOADS:
        context = make_context(get_workload(name).build(), llvm_target)
        spaces = list(context.generate_design_space())
        out[name] = (context, spaces, [Sketch.from_schedule(context.mod, s) for s in spaces])
    return out

