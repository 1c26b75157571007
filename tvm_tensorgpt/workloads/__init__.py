"""Built-in workloads: single operators as TIR (for `tune --workload`) and small models via relax.

Shapes follow the seed's networks (ResNet, MobileNetV2, BERT); no weights are downloaded — only
shapes matter for tuning. The full five-network set comes with the data pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tvm import te, topi
from tvm.ir import IRModule

from .tasks import get_task


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # operator kind, used as a workload feature and in reports
    description: str
    build: Callable[[], IRModule]


def _prim(tensors: list[te.Tensor]) -> IRModule:
    return IRModule({"main": te.create_prim_func(tensors)})


def _matmul(n: int) -> Callable[[], IRModule]:
    def build() -> IRModule:
        a = te.placeholder((n, n), name="A")
        b = te.placeholder((n, n), name="B")
        return _prim([a, b, topi.nn.matmul(a, b)])

    return build


def _conv2d() -> IRModule:
    x = te.placeholder((1, 64, 56, 56), name="X")
    w = te.placeholder((64, 64, 3, 3), name="W")
    return _prim([x, w, topi.nn.relu(topi.nn.conv2d_nchw(x, w, 1, 1, 1))])


def _depthwise() -> IRModule:
    x = te.placeholder((1, 96, 56, 56), name="X")
    w = te.placeholder((96, 1, 3, 3), name="W")
    return _prim([x, w, topi.nn.depthwise_conv2d_nchw(x, w, 1, 1, 1)])


def _softmax() -> IRModule:
    x = te.placeholder((1, 12, 128, 128), name="X")
    return _prim([x, topi.nn.softmax(x)])


def _layernorm() -> IRModule:
    x = te.placeholder((1, 128, 768), name="X")
    g = te.placeholder((768,), name="gamma")
    b = te.placeholder((768,), name="beta")
    return _prim([x, g, b, topi.nn.layer_norm(x, g, b, axis=[2])])


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload("matmul-128", "matmul", "128x128x128 fp32 matmul", _matmul(128)),
        Workload("matmul-512", "matmul", "512x512x512 fp32 matmul (GEMM roofline size)", _matmul(512)),
        Workload("conv2d-resnet", "conv2d", "ResNet 3x3 conv 64->64 on 56x56 + ReLU", _conv2d),
        Workload("depthwise-mobilenet", "depthwise_conv2d", "MobileNetV2 3x3 depthwise, 96ch 56x56", _depthwise),
        Workload("softmax-bert", "softmax", "BERT attention softmax 12x128x128", _softmax),
        Workload("layernorm-bert", "layer_norm", "BERT layer norm 128x768", _layernorm),
    ]
}


def get_workload(name: str) -> Workload:
    """A built-in operator, or a task of the five networks by its name (``resnet50/...``)."""
    if name in WORKLOADS:
        return WORKLOADS[name]
    try:
        task = get_task(name)
    except KeyError:
        raise ValueError(
            f"unknown workload {name!r}; known workloads: {', '.join(sorted(WORKLOADS))}, or a network "
            "task name such as resnet50/mean (list them with `tensorgpt workloads --tasks`)"
        ) from None
    return Workload(task.name, task.kind, f"task of {', '.join(task.networks)}", lambda: task.mod)


__all__ = ["WORKLOADS", "Workload", "get_workload"]
