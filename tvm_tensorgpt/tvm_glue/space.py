"""Design spaces as MetaSchedule makes them: post-order-apply with the target's rules.

``design_spaces`` gives the TuneContext of a workload on a target (its postprocessors decide
validity) and the design spaces; ``resolved_postprocs`` / ``resolved_mutators`` the
postprocessors any TuneContext must apply and the mutators its search may use, also where a Python
space generator left them unset; ``mutate`` applies a mutator reproducibly.
"""

from __future__ import annotations

from tvm.ir import IRModule
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule import _ffi_api
from tvm.s_tir.meta_schedule.space_generator import PostOrderApply
from tvm.s_tir.schedule import Trace

from .intrinsics import load_tensor_intrinsics
from .target import TargetLike, parse_target


def design_spaces(mod: IRModule, target: TargetLike, seed: int = 1) -> tuple[ms.TuneContext, list[Schedule]]:
    """The TuneContext of post-order-apply for ``mod`` on ``target`` and its design spaces."""
    target = parse_target(target)
    load_tensor_intrinsics(target)
    context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply",
                             search_strategy="replay-trace", num_threads=1, rand_state=seed)  # fmt: skip
    return context, list(context.generate_design_space())


def _defaults(context: ms.TuneContext) -> PostOrderApply:
    defaults = PostOrderApply()
    defaults._initialize_with_tune_context(context)
    return defaults


def resolved_postprocs(context: ms.TuneContext) -> list:
    """The postprocessors a tuning of ``context`` must apply.

    A Python space generator's rule fields stay unset when it is built with "from-target" (only
    C++ generators fill in the target's defaults), and C++ fields cannot be set afterwards. The
    stock flows (tune_tir, tune_relax) clone each TuneContext, and the plugin's space generator
    passes resolved rules on in ``clone``; for a context used without cloning, resolve the
    target's defaults here.
    """
    space = context.space_generator
    if space is not None and space.postprocs is not None:
        return list(space.postprocs)
    return list(_defaults(context).postprocs)


def resolved_mutators(context: ms.TuneContext) -> dict:
    """The mutators (with their probabilities) of ``context``'s target, like ``resolved_postprocs``."""
    space = context.space_generator
    if space is not None and space.mutator_probs:
        return dict(space.mutator_probs)
    return dict(_defaults(context).mutator_probs)


def mutate(mutator: ms.Mutator, trace: Trace, seed: int) -> Trace | None:
    """``mutator`` applied to ``trace`` with the random state ``seed`` (1 .. 2^31-1). Python's
    ``Mutator.apply`` seeds from the device's entropy, which would make a seeded search differ
    from run to run."""
    return _ffi_api.MutatorApply(mutator, trace, seed)
