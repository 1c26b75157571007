"""``SpaceGenerator.create("tensorgpt")``: the target's post-order-apply sketches, prunable.

It produces the same design spaces as MetaSchedule's ``PostOrderApply`` with the target's rules,
loads only the tensor intrinsics the target needs, and is the place where sketches a model rates
poorly can be dropped (``sketch_filter``) before the search strategy sees them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tvm.ir import IRModule
from tvm.ir.utils import derived_object
from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule.space_generator import PostOrderApply, PySpaceGenerator, SpaceGenerator

from .intrinsics import load_tensor_intrinsics

if TYPE_CHECKING:
    from tvm.s_tir.meta_schedule import TuneContext

logger = logging.getLogger(__name__)

# Given the workload and its design spaces, say which to keep (same order, one bool each).
SketchFilter = Callable[[IRModule, list[Schedule]], list[bool]]


@derived_object
class TensorGPTSpaceGenerator(PySpaceGenerator):
    """Post-order-apply design spaces, optionally pruned by ``sketch_filter``."""

    def __init__(
        self,
        sch_rules: Any = "from-target",
        postprocs: Any = "from-target",
        mutator_probs: Any = "from-target",
        sketch_filter: SketchFilter | None = None,
    ) -> None:
        self.sch_rules = sch_rules
        self.postprocs = postprocs
        self.mutator_probs = mutator_probs
        self.sketch_filter = sketch_filter
        self._inner: SpaceGenerator | None = None

    def _initialize_with_tune_context(self, context: "TuneContext") -> None:
        if context.target is not None:
            load_tensor_intrinsics(context.target)
        self._inner = PostOrderApply(
            sch_rules=self.sch_rules, postprocs=self.postprocs, mutator_probs=self.mutator_probs
        )
        self._inner._initialize_with_tune_context(context)

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        if self._inner is None:
            raise RuntimeError("TensorGPTSpaceGenerator used before a TuneContext initialised it")
        spaces = list(self._inner.generate_design_space(mod))
        if self.sketch_filter is None or not spaces:
            return spaces
        keep = self.sketch_filter(mod, spaces)
        kept = [s for s, k in zip(spaces, keep) if k]
        if not kept:
            logger.warning("sketch_filter rejected all %d design spaces; keeping them all", len(spaces))
            return spaces
        logger.info("sketch_filter kept %d of %d design spaces", len(kept), len(spaces))
        return kept

    def clone(self) -> SpaceGenerator:
        """A copy whose rules are the target's, resolved (see ``resolved_postprocs``)."""
        if self._inner is None:
            return TensorGPTSpaceGenerator(
                self.sch_rules, self.postprocs, self.mutator_probs, self.sketch_filter
            )
        inner = self._inner
        return TensorGPTSpaceGenerator(
            sch_rules=[rule.clone() for rule in inner.sch_rules],
            postprocs=[postproc.clone() for postproc in inner.postprocs],
            mutator_probs={m.clone(): float(p) for m, p in inner.mutator_probs.items()},
            sketch_filter=self.sketch_filter,
        )


def resolved_postprocs(context: "TuneContext") -> list:
    """The postprocessors a tuning of ``context`` must apply.

    A Python space generator's rule fields stay unset when it is built with "from-target" (only
    C++ generators fill in the target's defaults), and C++ fields cannot be set afterwards. The
    stock flows (tune_tir, tune_relax) clone each TuneContext, and ``clone`` above passes resolved
    rules on; for a context used without cloning, resolve the target's defaults here.
    """
    space = context.space_generator
    if space is not None and space.postprocs is not None:
        return list(space.postprocs)
    defaults = PostOrderApply()
    defaults._initialize_with_tune_context(context)
    return list(defaults.postprocs)
