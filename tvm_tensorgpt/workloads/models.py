"""Small PyTorch models imported through relax (TVM >= 0.20 has no relay; relax is the flow).

``prepare`` applies the passes MetaSchedule task extraction needs (a raw import gives no tasks);
``apply_database`` compiles the *raw* module with a tuning database and counts what it replaced.
Importing this module imports torch (the networks are PyTorch modules).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tvm
from tvm import relax
from tvm.ir import IRModule
from tvm.target import Target

from .networks import NETWORKS, build_network


@dataclass(frozen=True)
class Model:
    name: str
    description: str
    build: Callable[[], Any]  # -> (torch.nn.Module, example input tuple)


def _conv_block() -> Any:
    import torch

    class ConvBlock(torch.nn.Module):
        """conv3x3 + ReLU + residual add, the body of a ResNet basic block."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(32, 32, 3, padding=1, bias=False)

        def forward(self, x: "torch.Tensor") -> "torch.Tensor":
            return torch.relu(self.conv(x)) + x

    torch.manual_seed(0)
    return ConvBlock().eval(), (torch.randn(1, 32, 28, 28),)


def _network(name: str) -> Callable[[], Any]:
    def build() -> Any:
        return build_network(name)

    return build


def _models() -> dict[str, Model]:
    models = [Model("conv-block", "conv3x3(32->32, 28x28) + ReLU + residual add, from PyTorch", _conv_block)]
    models += [Model(name, description, _network(name)) for name, (description, _, _) in NETWORKS.items()]
    return {m.name: m for m in models}


MODELS: dict[str, Model] = _models()


def get_model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(MODELS))}") from None


def import_model(name: str) -> tuple[IRModule, dict[str, Any], tuple[Any, ...]]:
    """(relax module with weights bound as constants, params, example torch inputs)."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    module, example = get_model(name).build()
    with torch.no_grad():
        exported = torch.export.export(module, example)
    mod = from_exported_program(exported, keep_params_as_input=False)
    return mod, {}, example


def prepare(mod: IRModule, target: Target) -> IRModule:
    """Legalize and fuse, so that ``extract_tasks`` finds the fused TIR kernels."""
    seq = tvm.transform.Sequential(
        [
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
            relax.pipeline.zero_pipeline(),
        ]
    )
    with target:
        return seq(mod)


def apply_database(mod: IRModule, target: Target, database: Any) -> tuple[Any, int]:
    """Compile ``mod`` (raw or prepared) with the database's best schedules.

    Returns (executable, number of PrimFuncs the database replaced). Counting matters: a module
    fused by a different pass list hashes differently and silently gets no record applied.
    """
    prepared = prepare(mod, target)
    with target, database:
        tuned = relax.transform.MetaScheduleApplyDatabase()(prepared)
    replaced = sum(
        1
        for gv, func in tuned.functions.items()
        if isinstance(func, tvm.tirx.PrimFunc) and func.attrs is not None and func.attrs.get("tirx.is_scheduled", False)
    )
    return tvm.compile(tuned, target=target), replaced
