"""Tuning tasks of the five networks: extraction through relax, the fixed split, a task file.

``extract_tasks`` imports each network from PyTorch (``torch.export`` +
``from_exported_program``, weights bound), prepares it (legalize + fuse) and extracts
MetaSchedule's tasks. Identical kernels across networks are one task (first name wins; weights
add up). The result is saved once as ``data/tasks.json.gz`` (TVM JSON of each task's TIR), so
tuning, collection and the CLI load tasks in a second without PyTorch.

Task names are ``<network>/<relax task name>``. Which of them are held out is the data's split
(``tvm_tensorgpt.data.split``).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tvm
import tvm_ffi
from tvm.ir import IRModule
from tvm.s_tir import meta_schedule as ms

from ..tvm_glue import load_tensor_intrinsics

TASK_FILE = "data/tasks.json.gz"

@dataclass
class Task:
    name: str
    kind: str  # conv2d | depthwise_conv2d | conv3d | dense | batch_matmul | reduction | elementwise
    mod: IRModule
    weight: int = 1
    networks: list[str] = field(default_factory=list)


def task_kind(mod: IRModule) -> str:
    """The operator kind of a task, from its block names and iterator counts."""
    text = mod.script()
    if 'T.sblock("group_conv2d' in text or 'T.sblock("DepthwiseConv2d' in text:
        return "depthwise_conv2d"
    if 'T.sblock("conv3d' in text:
        return "conv3d"
    if 'T.sblock("conv2d' in text:
        return "conv2d"
    if 'T.sblock("matmul"' in text:
        block = text.split('T.sblock("matmul"', 1)[1]
        axes = block.split("T.axis.remap(", 1)[1].split(",", 1)[0].strip('"') if "T.axis.remap(" in block else ""
        return "batch_matmul" if len(axes) > 3 else "dense"
    if any(k in text for k in ("_red", "maxelem", "_sum", "pool_max", "pool_sum")):
        return "reduction"
    return "elementwise"


def extract_tasks(networks: list[str] | None = None, keep: Sequence[Task] = ()) -> list[Task]:
    """Tasks of the networks (all, the training-only ones last, by default), deduplicated across
    networks; ``keep``: tasks extracted before, listed first (a kernel they have keeps their name)."""
    # torch only when extracting (start-up cost): loading the committed tasks needs none of it
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    from .models import prepare
    from .networks import NETWORKS, TRAINING_ONLY, build_network

    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    load_tensor_intrinsics(target)
    tasks: list[Task] = [dataclasses.replace(t, networks=list(t.networks)) for t in keep]
    for network in networks or [*NETWORKS, *TRAINING_ONLY]:
        module, example = build_network(network)
        with torch.no_grad():
            exported = torch.export.export(module, example)
        mod = prepare(from_exported_program(exported, keep_params_as_input=False), target)
        for extracted in ms.relax_integration.extract_tasks(mod, target):
            kernel = extracted.dispatched[0]
            same = next((t for t in tasks if tvm_ffi.structural_equal(t.mod, kernel)), None)
            if same is not None:
                same.weight += int(extracted.weight)
                same.networks.append(network)
                continue
            tasks.append(Task(f"{network}/{extracted.task_name}", task_kind(kernel), kernel,
                              int(extracted.weight), [network]))  # fmt: skip
    return tasks


def save_tasks(tasks: list[Task], path: str | Path) -> None:
    rows = [{"name": t.name, "kind": t.kind, "weight": t.weight, "networks": t.networks,
             "mod": tvm.ir.save_json(t.mod)} for t in tasks]  # fmt: skip
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump({"version": 1, "tvm": tvm.__version__, "tasks": rows}, f)


def _read(path: str | Path | None) -> list[Task]:
    if path is None:
        raw = resources.files("tvm_tensorgpt.workloads").joinpath(TASK_FILE).read_bytes()
        data = json.loads(gzip.decompress(raw))
    else:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    return [Task(r["name"], r["kind"], tvm.ir.load_json(r["mod"]), r["weight"], r["networks"]) for r in data["tasks"]]


@lru_cache(maxsize=1)
def load_tasks() -> tuple[Task, ...]:
    """The committed task set (``python -m tvm_tensorgpt workloads extract`` rebuilds it)."""
    return tuple(_read(None))


def get_task(name: str) -> Task:
    for task in load_tasks():
        if task.name == name:
            return task
    raise KeyError(name)
