"""PyTorch models imported through relax (TVM >= 0.20 has no relay; relax is the flow).

A model is a built-in name, a saved ``torch.export`` program (``.pt2``, ``torch.export.save``), or
``file.py:function`` (a function returning the ``nn.Module`` and a tuple of example inputs). A
``.pt2`` is loaded with torch's weights-only unpickler forced: a model file is data, never code.
``prepare`` applies the passes MetaSchedule task extraction needs (a raw import gives no tasks);
``apply_database`` compiles the *raw* module with a tuning database and counts what it replaced.
Importing this module imports torch (the networks are PyTorch modules).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
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


class ModelError(ValueError):
    """A model that cannot be loaded or imported; the message says what to do."""


def get_model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}: give a built-in name ({', '.join(sorted(MODELS))}), a .pt2 "
                         "file written by torch.export.save, or file.py:function") from None  # fmt: skip


@contextlib.contextmanager
def _weights_only() -> Iterator[None]:
    """torch.load refuses to unpickle anything but tensors and plain containers meanwhile."""
    before = os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"]
        else:
            os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = before


def export_model(spec: str | tuple[Any, tuple[Any, ...]]) -> tuple[Any, tuple[Any, ...]]:
    """(``torch.export.ExportedProgram``, example inputs) of a built-in name, a .pt2, file.py:function
    or an (nn.Module, example inputs) pair."""
    import torch

    if isinstance(spec, tuple):
        module, example = _pair(spec, "tune_torch's model")
        spec = type(module).__name__
    elif spec.endswith(".pt2"):
        if not Path(spec).is_file():
            raise ModelError(f"model file {spec} does not exist")
        try:
            with _weights_only():
                exported = torch.export.load(spec)
        except Exception as err:  # noqa: BLE001 - torch raises many types for a bad archive
            raise ModelError(f"{spec} is not a program written by torch.export.save ({type(err).__name__}: "
                             f"{str(err).strip().splitlines()[-1][:200] if str(err).strip() else ''})") from None  # fmt: skip
        args = exported.example_inputs[0] if exported.example_inputs else None
        if not args:
            raise ModelError(f"{spec} holds no example inputs; export it with torch.export.export(model, args) "
                             "before torch.export.save")  # fmt: skip
        return exported, tuple(args)
    elif ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        module, example = _from_function(spec)
    else:
        module, example = get_model(spec).build()
    try:
        with torch.no_grad():
            return torch.export.export(module, example), example
    except Exception as err:  # noqa: BLE001 - torch.export raises many types
        raise ModelError(f"torch.export cannot export {spec}: {str(err).strip().splitlines()[0][:300]}") from None


def _from_function(spec: str) -> tuple[Any, tuple[Any, ...]]:
    """Call ``function`` of ``file.py``: it must return (torch.nn.Module, tuple of example tensors)."""
    path, function = spec.rsplit(":", 1)
    if not Path(path).is_file():
        raise ModelError(f"{path} does not exist (--model file.py:function)")
    loader = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(loader)  # type: ignore[arg-type]
    try:
        loader.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as err:  # noqa: BLE001 - the user's file may raise anything
        raise ModelError(f"importing {path} failed: {type(err).__name__}: {err}") from None
    make = getattr(module, function, None)
    if not callable(make):
        raise ModelError(f"{path} has no function {function!r}")
    return _pair(make(), spec)


def _pair(value: Any, what: str) -> tuple[Any, tuple[Any, ...]]:
    """``value`` checked to be (torch.nn.Module, tuple of example tensors); the module in eval mode."""
    import torch

    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], torch.nn.Module)
            and isinstance(value[1], (tuple, list)) and all(isinstance(x, torch.Tensor) for x in value[1])):  # fmt: skip
        raise ModelError(f"{what} must return (torch.nn.Module, tuple of example tensors), got "
                         f"{type(value).__name__}")  # fmt: skip
    return value[0].eval(), tuple(value[1])


def import_model(spec: str | tuple[Any, tuple[Any, ...]]) -> tuple[IRModule, Any, tuple[Any, ...]]:
    """(relax module with weights bound as constants, the ``torch.export`` program, example torch
    inputs) of a model spec (see ``export_model``); an operator relax cannot import is a
    ``ModelError`` naming it."""
    from tvm.relax.frontend.torch import from_exported_program

    exported, example = export_model(spec)
    try:
        mod = from_exported_program(exported, keep_params_as_input=False)
    except Exception as err:  # noqa: BLE001 - the frontend raises assertion and value errors
        label = spec if isinstance(spec, str) else type(spec[0]).__name__
        raise ModelError(f"relax cannot import {label}: {str(err).strip().splitlines()[-1][:300]}") from None
    return mod, exported, example


def eager_latency(exported: Any, example: tuple[Any, ...], threads: int, runs: int = 5,
                  min_seconds: float = 1.0) -> tuple[float, Any]:  # fmt: skip
    """(median latency in us, first output) of the exported program run by PyTorch on ``threads``
    threads: the baseline a tuned model is compared with. At least ``runs`` timed runs and at least
    ``min_seconds`` of them, after one warm-up (five runs of ResNet-18 varied 1.8x between calls)."""
    import time

    import torch

    module = exported.module()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            output = module(*example)
            module(*example)
            times: list[float] = []
            while len(times) < runs or sum(times) < min_seconds:
                start = time.perf_counter()
                module(*example)
                times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(before)
    while isinstance(output, (tuple, list)):
        output = output[0]
    return sorted(times)[len(times) // 2] * 1e6, output


def run_executable(executable: Any, example: tuple[Any, ...]) -> Any:
    """The first output of a compiled relax executable on ``example`` (numpy)."""
    vm = relax.VirtualMachine(executable, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(x.numpy()) for x in example])
    while not hasattr(out, "numpy"):  # exported programs return a tuple of outputs
        out = out[0]
    return out.numpy()


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
