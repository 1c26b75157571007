"""Device limits as decoding masks: threads and virtual threads per CUDA block.

MetaSchedule's GPU multi-level tiling splits each spatial loop with a sampled perfect tile, fuses
one tile level across the loops and binds it to ``blockIdx`` / ``vthread`` / ``threadIdx``.
Following split → fuse → bind through a sketch's trace tells which tile positions multiply into
the block's thread count, so the factor chosen at such a position can be masked at decode time to
keep the block within the device's ``max_threads_per_block`` (and at or above the sketch's own
``meta_schedule.thread_extent_low_inclusive``). What cannot be known at decode time (shared
memory, registers) is left to ``VerifyGPUCode`` and the compiler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import tvm

from .constraints import DecodeContext, _divisors
from .sketch import TILE, DecisionSlot, Sketch, is_sampling

if TYPE_CHECKING:
    from ..hardware.profile import HardwareProfile

MAX_VTHREADS = 8  # MetaSchedule's VerifyGPUCode default ("max_vthread")


@dataclass(frozen=True)
class BoundPositions:
    """Tile positions (slot index, position) whose factors multiply into each bound extent."""

    threads: tuple[tuple[int, int], ...]
    vthreads: tuple[tuple[int, int], ...]
    low: int  # the sketch's minimum threads per block (1 when it sets none)
    high: int | None  # the sketch's own maximum, if it sets one


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def bound_positions(sketch: Sketch) -> BoundPositions:
    """Walk the sketch's trace: sampled tile → split → fuse → bind."""
    factor_of: dict[Any, tuple[int, int]] = {}
    positions: dict[Any, list[tuple[int, int]]] = {}
    bound: dict[str, list[tuple[int, int]]] = {"threadIdx": [], "vthread": []}
    low, high, slot = 1, None, -1
    for inst in sketch.trace.insts:
        name = inst.kind.name
        if name == "EnterPostproc":
            break
        if is_sampling(inst):
            slot += 1
            if name == "SamplePerfectTile":
                for k, rv in enumerate(inst.outputs):
                    factor_of[rv] = (slot, k)
        elif name == "Split":
            factors = list(inst.inputs)[1:]
            for loop, factor in zip(inst.outputs, factors):
                positions[loop] = [factor_of[factor]] if factor is not None and factor in factor_of else []
        elif name == "Fuse":
            positions[inst.outputs[0]] = [p for loop in inst.inputs if isinstance(loop, tvm.s_tir.schedule.LoopRV)
                                          for p in positions.get(loop, [])]  # fmt: skip
        elif name == "Bind":
            axis = str(inst.attrs[0]).split(".")[0]
            if axis in bound:
                bound[axis] += positions.get(inst.inputs[0], [])
        elif name == "Annotate" and inst.attrs:
            key, value = str(inst.attrs[0]), _int(list(inst.inputs)[1])
            if key == "meta_schedule.thread_extent_low_inclusive" and value:
                low = max(low, value)
            elif key == "meta_schedule.thread_extent_high_inclusive" and value:
                high = value if high is None else min(high, value)
    return BoundPositions(tuple(bound["threadIdx"]), tuple(bound["vthread"]), low, high)


class ThreadLimitFilter:
    """Masks tile factors bound to threads so a block stays within ``max_threads`` (and the
    sketch's minimum) and its virtual threads within ``max_vthreads``."""

    def __init__(self, max_threads: int, max_vthreads: int = MAX_VTHREADS) -> None:
        if max_threads < 1:
            raise ValueError(f"max_threads must be positive, not {max_threads}")
        self.max_threads = max_threads
        self.max_vthreads = max_vthreads
        self._cache: dict[int, tuple[Sketch, BoundPositions]] = {}

    def __repr__(self) -> str:
        return f"ThreadLimitFilter(max_threads={self.max_threads})"

    def __call__(self, slot: DecisionSlot, prefix: tuple[int, ...], values: list[int]) -> list[int]:
        return values  # needs the decoding context: see ``narrow``

    def _bound(self, sketch: Sketch) -> BoundPositions:
        cached = self._cache.get(id(sketch))
        if cached is None or cached[0] is not sketch:
            cached = (sketch, bound_positions(sketch))
            self._cache[id(sketch)] = cached
        return cached[1]

    def narrow(self, context: DecodeContext, slot: DecisionSlot, prefix: tuple[int, ...], values: list[int]) -> list[int]:
        """Keep the factors after which the bound extents can still land within their limits.

        The check runs at every position of a tile that feeds a bound extent now or later: a
        blockIdx factor taken early can leave too little of the loop for the threads."""
        if slot.kind != TILE or slot.extent is None:
            return values
        bound = self._bound(context.sketch)
        here = (context.index, len(prefix))
        high = min(bound.high or self.max_threads, self.max_threads)
        for group, low, limit in ((bound.threads, bound.low, high), (bound.vthreads, 1, self.max_vthreads)):
            if not any(position >= here for position in group):
                continue
            values = [v for v in values if self._feasible(context, prefix, v, group, low, limit)]
        return values

    @staticmethod
    def _feasible(context: DecodeContext, prefix: tuple[int, ...], value: int,
                  group: tuple[tuple[int, int], ...], low: int, limit: int) -> bool:  # fmt: skip
        """Taking ``value`` now: can the group's product still land in [low, limit]?

        Later positions can take any divisor of what is left of their loop (of the whole loop for
        slots not decoded yet), so the reachable products are enumerated exactly, up to ``limit``.
        """
        chosen = (*prefix, value)
        index, extent = context.index, context.sketch.slots[context.index].extent or 1
        remaining = extent // math.prod(chosen)
        partial, reachable = 1, {1}
        for s, p in group:
            if s < index:
                decided = context.decided[s]
                partial *= decided[p] if isinstance(decided, tuple) else 1
                continue
            if s == index and p < len(chosen):
                partial *= chosen[p]
                continue
            options = _divisors(remaining if s == index else context.sketch.slots[s].extent or 1)
            reachable = {r * d for r in reachable for d in options if r * d <= limit}
        return partial <= limit and any(low <= partial * r <= limit for r in reachable)


def thread_count(sketch: Sketch, decisions: list) -> int:
    """Threads per block that ``decisions`` give this sketch (1 when nothing is bound)."""
    bound = bound_positions(sketch)
    return math.prod(d[p] if isinstance(d := decisions[s], tuple) else 1 for s, p in bound.threads)


def device_filters(profile: HardwareProfile) -> list[ThreadLimitFilter]:
    """The decoding masks a device's limits give (GPU: threads per block; CPU: none)."""
    from ..hardware.profile import GPUSpecs

    if isinstance(profile.specs, GPUSpecs):
        return [ThreadLimitFilter(profile.specs.max_threads_per_block)]
    return []
