"""Constrained decoding: the legal next tokens at every point of a response.

A generator that only ever picks from ``DecodingState.legal_tokens()`` produces structurally valid
decision sets by construction: tile factors multiply to the loop extent, the innermost factor
respects ``max_innermost_factor``, categorical indices are in range and compute locations are ones
TVM accepts. Device limits plug in as extra filters (``DecisionFilter``, or ``ContextFilter`` when
the limit spans slots, e.g. threads per block from the hardware profile); a filter that would leave nothing legal is
ignored for that step so decoding always finishes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from copy import copy as shallow_copy
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Union

from .codec import decision_tokens
from .sketch import CATEGORICAL, LOCATION, TILE, Decision, DecisionSlot, Sketch
from .vocab import VOCAB, Vocabulary

UNKNOWN = "unknown"  # DecodingState(tvm_locations=UNKNOWN): TVM samples the locations not known without a replay

logger = logging.getLogger(__name__)


class DecisionFilter(Protocol):
    """Narrows the legal values of one decision step (a hardware mask, for instance).

    ``prefix`` is what the slot has decided so far (tile factors chosen before this one).
    Values are factors for tiles, candidate indices for categoricals, location indices otherwise.
    A filter is a pure function of its arguments: decoding keeps its results per legality key
    (``DecodingState.key``).
    """

    def __call__(self, slot: DecisionSlot, prefix: tuple[int, ...], values: list[int]) -> list[int]: ...


@dataclass(frozen=True)
class DecodeContext:
    """Where decoding stands, for filters whose limit spans slots (``ContextFilter``; e.g.
    threads per block multiply factors of several tiles)."""

    sketch: Sketch
    index: int  # the slot being decoded
    decided: tuple[Decision, ...]  # the slots before it


class ContextFilter(Protocol):
    """A ``DecisionFilter`` that also sees the sketch and the slots decided so far."""

    def narrow(self, context: DecodeContext, slot: DecisionSlot, prefix: tuple[int, ...],
               values: list[int]) -> list[int]: ...  # fmt: skip


Filter = Union[DecisionFilter, ContextFilter]


@lru_cache(maxsize=1 << 16)
def _divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


@lru_cache(maxsize=1 << 16)
def _completable(rest: int, parts: int, max_innermost: int) -> bool:
    """Can ``rest`` be split into ``parts`` representable factors, the last within the limit?"""
    if parts == 1:
        return VOCAB.has_number(rest) and (max_innermost <= 0 or rest <= max_innermost)
    return any(
        VOCAB.has_number(f) and _completable(rest // f, parts - 1, max_innermost)
        for f in _divisors(rest)
    )


def tile_factors(slot: DecisionSlot, prefix: tuple[int, ...]) -> list[int]:
    """Factors legal at position ``len(prefix)`` of a perfect tile."""
    assert slot.extent is not None
    done = 1
    for f in prefix:
        done *= f
    rest = slot.extent // done
    left = slot.parts - len(prefix)
    if left == 1:
        return [rest] if _completable(rest, 1, slot.max_innermost) else []
    return [
        f
        for f in _divisors(rest)
        if VOCAB.has_number(f) and _completable(rest // f, left - 1, slot.max_innermost)
    ]


def is_modelled(slot: DecisionSlot) -> bool:
    """Whether the language decodes this slot itself (otherwise TVM samples it: prior fallback)."""
    if slot.kind == TILE:
        return slot.extent is not None and slot.extent > 0 and bool(tile_factors(slot, ()))
    if slot.kind == CATEGORICAL:
        return 0 < len(slot.choices) <= 64
    if slot.kind == LOCATION:
        return bool(slot.choices)
    return False


def legal_values(
    slot: DecisionSlot,
    prefix: tuple[int, ...],
    filters: Sequence[Filter] = (),
    locations: Sequence[int] | None = None,
    context: DecodeContext | None = None,
) -> list[int]:
    """Legal values of the next decision step; ``locations`` is the live set for a location slot
    (``Sketch.legal_locations``), defaulting to the set seen in the design space; ``context``
    feeds filters that look across slots."""
    if slot.kind == TILE:
        values = tile_factors(slot, prefix)
    elif slot.kind == CATEGORICAL:
        values = list(range(len(slot.choices)))
    else:
        values = list(slot.choices if locations is None else locations)
    for f in filters:
        if hasattr(f, "narrow"):
            if context is None:
                continue
            narrowed = f.narrow(context, slot, prefix, values)
        else:
            narrowed = f(slot, prefix, values)  # type: ignore[operator]
        if narrowed:
            values = narrowed
        else:
            logger.debug("filter %r left no legal value for %s; ignored", f, slot.inst_kind)
    return values


class DecodingState:
    """Walks a sketch's slots token by token, exposing the legal next tokens.

    Slots the language does not model are emitted as ``<unk>`` (one per token of the slot) and
    decode to None, which lets TVM sample them. With ``tvm_locations`` compute-location slots are
    left to TVM the same way: its sampler draws uniformly from the live legal set, which saves the
    replay ``Sketch.legal_locations`` needs, but a decision set with a location left open can only
    be realised exactly (``Sketch.apply``), at TVM's cost of a trial compute-at per loop. With
    ``tvm_locations=UNKNOWN`` only the locations whose legal set the sketch cannot tell without a
    replay (``Sketch.known_locations``) are left to TVM, and every location after one that was: a
    learned structure's location costs nothing to decode and spares the exact replay.
    """

    def __init__(
        self,
        sketch: Sketch,
        filters: Sequence[Filter] = (),
        vocab: Vocabulary = VOCAB,
        tvm_locations: bool | str = False,
    ) -> None:
        if tvm_locations not in (False, True, UNKNOWN):
            raise ValueError(f"tvm_locations is True, False or {UNKNOWN!r}, not {tvm_locations!r}")
        self.sketch = sketch
        self.filters = tuple(filters)
        self.vocab = vocab
        self.known_only = tvm_locations == UNKNOWN
        self.modelled = [
            is_modelled(s) and not (tvm_locations is True and s.kind == LOCATION) for s in sketch.slots
        ]
        self.tokens: list[str] = []
        self._decisions: list[Decision] = []
        self._prefix: list[int] = []
        self._legal: list[str] | None = None  # cache for the current step
        # legal sets by ``key``, shared with every ``copy``: rows decoding one sketch reuse them
        self._memo: dict[tuple, list[str]] = {}
        self._across = any(hasattr(f, "narrow") for f in self.filters)  # a filter reads earlier slots

    @property
    def done(self) -> bool:
        return len(self._decisions) == len(self.sketch.slots)

    @property
    def slot(self) -> DecisionSlot:
        return self.sketch.slots[len(self._decisions)]

    @property
    def key(self) -> tuple:
        """What the legal next tokens depend on: states of one sketch and filters with equal keys
        have the same legal set. A tile or categorical step depends on its slot and the factors
        chosen in it (filters are pure functions of their arguments); a location, or any step
        under a filter that looks across slots, also on every decision before."""
        index = len(self._decisions)
        if self.done or not self.modelled[index]:
            return (index,)
        history = tuple(self._decisions) if self._across or self.slot.kind == LOCATION else None
        return (index, tuple(self._prefix), history)

    def copy(self) -> DecodingState:
        """An independent state at the same point that shares the legal sets computed so far (and
        from then on): many rows sampled from one sketch compute each legal set once."""
        twin = shallow_copy(self)
        twin.tokens, twin._decisions, twin._prefix = list(self.tokens), list(self._decisions), list(self._prefix)
        return twin

    def legal_tokens(self) -> list[str]:
        """The legal next tokens (a list shared between states: read, never modify it)."""
        if self._legal is None:
            key = self.key
            legal = self._memo.get(key)
            if legal is None:
                legal = self._memo[key] = self._compute_legal()
            self._legal = legal
        return self._legal

    def _compute_legal(self) -> list[str]:
        if self.done:
            return ["<eos>"]
        slot = self.slot
        if not self.modelled[len(self._decisions)]:
            return ["<unk>"]
        locations = None
        if slot.kind == LOCATION:
            locations = self._known_locations() if self.known_only else self.sketch.legal_locations(self._decisions)
            if locations is None:
                return ["<unk>"]
        context = DecodeContext(self.sketch, len(self._decisions), tuple(self._decisions))
        values = legal_values(slot, tuple(self._prefix), self.filters, locations, context)
        if slot.kind == TILE:
            return [self.vocab.number(v) for v in values]
        return [decision_tokens(slot.kind, v, self.vocab)[0] for v in values]

    def _known_locations(self) -> tuple[int, ...] | None:
        """The live legal locations if known without a replay and no earlier location was left to
        TVM (then the replay is exact anyway: deciding the rest saves nothing)."""
        earlier = [d for d, s in zip(self._decisions, self.sketch.slots) if s.kind == LOCATION]
        return None if None in earlier else self.sketch.known_locations(self._decisions)

    def step(self, token: str) -> None:
        legal = self.legal_tokens()
        if token not in legal:
            raise ValueError(f"token {token!r} is not legal here; legal: {legal[:16]}")
        if self.done:
            self.tokens.append(token)
            return
        slot = self.slot
        self.tokens.append(token)
        self._legal = None
        if token == "<unk>":
            self._prefix.append(0)
            if len(self._prefix) == slot.num_tokens:
                self._finish(None)
            return
        value = int(token[1:])
        if slot.kind == TILE:
            self._prefix.append(value)
            if len(self._prefix) == slot.parts:
                self._finish(tuple(self._prefix))
        else:
            self._finish(value)

    def _finish(self, decision: Decision) -> None:
        self._decisions.append(decision)
        self._prefix = []

    def decisions(self) -> list[Decision]:
        if not self.done:
            raise ValueError("decoding is not finished")
        return list(self._decisions)
