"""``MixtureGenerator``: several generators share every pool, each by a fixed weight.

Why: a learned generator that fits a task worse than uniform sampling (the held-out finding of
docs/results.md) drags the whole search below its design space. With a share of every pool drawn
from the prior, the cost model can always choose uniform proposals instead, so the search cannot
fall far below the prior's, while whatever the model knows still reaches the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from tvm.target import Target

from ..language import Decision, Sketch
from .base import Generator, Proposal


class MixtureGenerator(Generator):
    """Splits each ``generate`` call between ``parts`` (generator, weight) by a multinomial draw."""

    def __init__(self, parts: Sequence[tuple[Generator, float]]) -> None:
        weights = np.asarray([w for _, w in parts], dtype=float)
        if not parts or np.any(weights < 0) or not np.isfinite(weights).all() or weights.sum() <= 0:
            raise ValueError(f"MixtureGenerator needs generators with non-negative weights summing to > 0, "
                             f"got {[w for _, w in parts]}")  # fmt: skip
        self.generators = [g for g, _ in parts]
        self.weights = weights / weights.sum()

    def prepare(self, target: Target) -> None:
        for generator in self.generators:
            generator.prepare(target)

    def generate(self, sketches: Sequence[Sketch], num: int, rng: np.random.Generator) -> list[Proposal]:
        counts = rng.multinomial(num, self.weights)
        return [replace(p, origin=p.origin or g.origin) for g, n in zip(self.generators, counts) if n
                for p in g.generate(sketches, int(n), rng)]  # fmt: skip

    def observe(self, sketch: Sketch, decisions: Sequence[Decision], latency_s: float | None) -> None:
        for generator in self.generators:
            generator.observe(sketch, decisions, latency_s)

    def describe(self) -> str:
        return " + ".join(f"{w:.0%} {g.describe()}" for g, w in zip(self.generators, self.weights))

    @property
    def mixes_prior(self) -> bool:
        return True  # its maker chose the parts and their shares: the search adds nothing
