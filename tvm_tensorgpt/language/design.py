"""A workload's design spaces on a target, analysed as sketches."""

from __future__ import annotations

from tvm.ir import IRModule
from tvm.s_tir import meta_schedule as ms

from ..tvm_glue import TargetLike, design_spaces
from .sketch import Sketch


def design_context(mod: IRModule, target: TargetLike, seed: int = 1) -> tuple[ms.TuneContext, list[Sketch]]:
    """The TuneContext of post-order-apply for ``mod`` on ``target`` (its postprocessors check
    candidates) and the sketches of its design spaces."""
    context, spaces = design_spaces(mod, target, seed)
    return context, [Sketch.from_schedule(context.mod, space) for space in spaces]


def design_sketches(mod: IRModule, target: TargetLike) -> list[Sketch]:
    """The sketches MetaSchedule's post-order-apply gives ``mod`` on ``target``."""
    return design_context(mod, target)[1]
