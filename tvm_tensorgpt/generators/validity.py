"""CUDA validity without a GPU: how many of a generator's proposals survive each stage.

MetaSchedule's structural postprocessors, then VerifyGPUCode with the device's limits, then
(optionally) TVM's CUDA code generation and nvcc for the device's arch (``tvm_glue.cuda``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from tvm.s_tir.meta_schedule import TuneContext

from ..language import Sketch
from ..tvm_glue import TVM_ERRORS, resolved_postprocs
from ..tvm_glue.cuda import compile_cuda, compile_error, nvcc_problem
from .base import Proposal


@dataclass
class ValidityCounts:
    """How many candidates survive each stage (``compiled`` is None where nvcc was not run)."""

    generated: int = 0
    applied: int = 0
    postprocessed: int = 0
    verified: int = 0
    compiled: int | None = None
    compile_tried: int = 0
    nvcc: str | None = None  # why nvcc was not run, if it was not
    compile_errors: list[str] = field(default_factory=list)  # compile_error() per failed candidate


def check_candidates(context: TuneContext, sketches: Sequence[Sketch], proposals: Sequence[Proposal],
                     compile_limit: int = 0) -> ValidityCounts:  # fmt: skip
    """Count ``proposals`` (for ``sketches`` of the TuneContext ``context``) through each stage;
    up to ``compile_limit`` verified ones also go through nvcc when it can target the arch."""
    postprocs = resolved_postprocs(context)
    verify = [p for p in postprocs if type(p).__name__ == "VerifyGPUCode"]
    structural = [p for p in postprocs if p not in verify]
    target = context.target
    problem = nvcc_problem(str(json.loads(str(target)).get("arch"))) if compile_limit else "not asked"
    counts = ValidityCounts(compiled=None if problem else 0, nvcc=problem)
    for proposal in proposals:
        counts.generated += 1
        realised = sketches[proposal.sketch_index].realise(proposal.decisions, structural + verify)
        counts.applied += int(realised.schedule is not None)
        counts.postprocessed += int(realised.schedule is not None and realised.passed >= len(structural))
        if not realised.valid:
            continue
        counts.verified += 1
        if problem is None and counts.compile_tried < compile_limit:
            counts.compile_tried += 1
            try:
                compile_cuda(realised.schedule, target)  # type: ignore[arg-type]
                counts.compiled += 1  # type: ignore[operator]
            except TVM_ERRORS as err:
                counts.compile_errors.append(compile_error(err))
    return counts
