"""Legal compute locations without replaying the trace: TVM's rule over a consumer's loops, and
where those loops' extents come from.

Which compute locations TVM accepts for a block depends on earlier tile sizes only through which
loops of its first consumer have extent 1 (TVM skips those). Reading that off the schedule costs a
replay of the trace prefix per decoded row, most of a model's decoding time on sketches with
location slots. Within one location structure (the slot and the locations decided before it)
each such loop's extent is a constant or one part of one earlier tile decision, so ``NestShape``
learns which from the replays it sees and, once its predictions agreed with ``SHAPE_CHECKS``
replays, gives the legal set from the decisions alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

SHAPE_CHECKS = 3  # predictions of one structure checked against replays before it is trusted

# where a loop's extent comes from: ("=", extent) a constant (None: not a constant), or
# (tile slot, part) that part of that slot's decision
Source = tuple


def scan_rule(kinds: Sequence[str], units: Sequence[bool], inline: bool) -> tuple[int, ...]:
    """TVM's CollectComputeLocation over the first consumer's loops down to the consumers' lowest
    common loop, given each loop's iteration kind ("S" spatial, else reduction or other) and
    whether its extent is 1: root (-1), inline (-2) where allowed, then the loops in order,
    skipping those of extent 1, stopping at a spatial loop after a reduction loop and at a
    reduction loop past the last spatial one."""
    out = ([-2] if inline else []) + [-1]
    last_spatial = max((i for i, kind in enumerate(kinds) if kind == "S"), default=-1)
    reduced = False
    for i, kind in enumerate(kinds):
        if units[i]:
            continue
        if kind == "S":
            if reduced:
                break
        else:
            reduced = True
            if i > last_spatial:
                break
        out.append(i)
    return tuple(out)


def _sources(extent: int | None, decided: Sequence) -> set[Source]:
    """Every source that explains ``extent`` under ``decided``."""
    found: set[Source] = {("=", extent)}
    for slot, decision in enumerate(decided):
        if isinstance(decision, tuple):
            found |= {(slot, part) for part, value in enumerate(decision) if value == extent}
    return found


@dataclass
class NestShape:
    """One location structure's scanned loops: their kinds and, per loop, the sources its extent
    has matched in every replay so far. ``agreed`` counts predictions a replay confirmed; -1 once
    one did not (or a replay did not fit the model): the structure is then always replayed."""

    kinds: tuple[str, ...] = ()
    inline: bool = False
    sources: list[set[Source]] = field(default_factory=list)
    agreed: int = 0
    replays: int = 0

    def predict(self, decided: Sequence) -> tuple[int, ...] | None:
        """The legal locations under ``decided``, or None: not trusted yet, or sources that still
        disagree on whether a loop has extent 1."""
        if self.agreed < SHAPE_CHECKS:
            return None
        return self._predict(decided)

    def _predict(self, decided: Sequence) -> tuple[int, ...] | None:
        units = []
        for sources in self.sources:
            unit = set()
            for source in sources:
                if source[0] == "=":
                    unit.add(source[1] == 1)
                    continue
                decision = decided[source[0]] if source[0] < len(decided) else None
                if not isinstance(decision, tuple):
                    return None  # a tile left to TVM: its extent is not known before the replay
                unit.add(decision[source[1]] == 1)
            if len(unit) != 1:
                return None
            units.append(unit.pop())
        return scan_rule(self.kinds, units, self.inline)

    def learn(self, decided: Sequence, kinds: tuple[str, ...], extents: Sequence[int | None], inline: bool,
              legal: tuple[int, ...]) -> None:  # fmt: skip
        """A replay's loops (``kinds``, constant ``extents`` or None) under ``decided`` and the
        legal set it gave."""
        if self.agreed < 0:
            return
        first = not self.replays
        self.replays += 1
        if first:
            self.kinds, self.inline = kinds, inline
            if scan_rule(kinds, [e == 1 for e in extents], inline) != legal:
                self.agreed = -1  # the rule does not describe this structure
                return
        elif kinds != self.kinds or inline != self.inline:
            self.agreed = -1
            return
        predicted = None if first else self._predict(decided)
        if first:
            self.sources = [_sources(e, decided) for e in extents]
        else:
            self.sources = [have & _sources(e, decided) for have, e in zip(self.sources, extents)]
        if any(not s for s in self.sources):
            self.agreed = -1  # an extent no single source explains (e.g. fused loops)
        elif predicted is not None:
            self.agreed = self.agreed + 1 if predicted == legal else -1
