"""Workload features the experts' router reads: operator kind, size and arithmetic intensity."""

from __future__ import annotations

import math

import numpy as np
from tvm.ir import IRModule
from tvm.s_tir.analysis import estimate_tir_flops

from ..language.sketch import describe_blocks
from .tasks import task_kind

KINDS = ("conv2d", "depthwise_conv2d", "conv3d", "dense", "batch_matmul", "reduction", "elementwise")
FEATURES = tuple(f"kind_{k}" for k in KINDS) + (
    "log10_flops", "log10_bytes", "log2_flop_per_byte", "log2_max_extent", "blocks",
)  # fmt: skip
WORKLOAD_DIM = len(FEATURES)


def workload_features(mod: IRModule) -> np.ndarray:
    """Kind one-hot, log10 FLOPs, log10 bytes of the arguments, log2 FLOP/byte, log2 of the largest
    argument dimension and the number of blocks (12 numbers)."""
    kind = task_kind(mod)
    flops = max(float(estimate_tir_flops(mod)), 1.0)
    func = mod[[gv for gv in mod.get_global_vars()][0]]
    size, extent = 0, 1
    for buffer in func.params:  # TVM 0.27: buffer parameters directly
        dims = [int(d) for d in buffer.shape]
        size += math.prod(dims) * max(1, np.dtype(str(buffer.dtype)).itemsize)
        extent = max([extent, *dims])
    onehot = [float(kind == k) for k in KINDS]
    size = max(size, 1)
    numbers = [math.log10(flops), math.log10(size), math.log2(flops / size), math.log2(extent),
               float(len(describe_blocks(mod)))]  # fmt: skip
    return np.array(onehot + numbers, dtype=np.float32)
