"""``SpaceGenerator.create("tensorgpt")``: the target's post-order-apply design spaces.

It produces the same design spaces as MetaSchedule's ``PostOrderApply`` with the target's rules,
but loads only the tensor intrinsics the target needs, and its ``clone`` passes the resolved rules
on (see ``tvm_glue.resolved_postprocs``).
"""

from __future__ import annotations

from typing import Any

from tvm.ir import IRModule
from tvm.ir.utils import derived_object
from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule import TuneContext
from tvm.s_tir.meta_schedule.space_generator import PostOrderApply, PySpaceGenerator, SpaceGenerator

from ..tvm_glue import load_tensor_intrinsics


@derived_object
class TensorGPTSpaceGenerator(PySpaceGenerator):
    """Post-order-apply design spaces, with only the target's tensor intrinsics loaded."""

    def __init__(self, sch_rules: Any = "from-target", postprocs: Any = "from-target",
                 mutator_probs: Any = "from-target") -> None:  # fmt: skip
        self.sch_rules = sch_rules
        self.postprocs = postprocs
        self.mutator_probs = mutator_probs
        self._inner: SpaceGenerator | None = None

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        if context.target is not None:
            load_tensor_intrinsics(context.target)
        self._inner = PostOrderApply(
            sch_rules=self.sch_rules, postprocs=self.postprocs, mutator_probs=self.mutator_probs
        )
        self._inner._initialize_with_tune_context(context)

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        if self._inner is None:
            raise RuntimeError("TensorGPTSpaceGenerator used before a TuneContext initialised it")
        return list(self._inner.generate_design_space(mod))

    def clone(self) -> SpaceGenerator:
        """A copy whose rules are the target's, resolved (see ``tvm_glue.resolved_postprocs``)."""
        if self._inner is None:
            return TensorGPTSpaceGenerator(self.sch_rules, self.postprocs, self.mutator_probs)
        inner = self._inner
        return TensorGPTSpaceGenerator(
            sch_rules=[rule.clone() for rule in inner.sch_rules],
            postprocs=[postproc.clone() for postproc in inner.postprocs],
            mutator_probs={m.clone(): float(p) for m, p in inner.mutator_probs.items()},
        )
