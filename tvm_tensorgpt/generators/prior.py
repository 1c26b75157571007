"""``PriorGenerator``: uniform sampling over the legal tokens of the schedule language.

The prior is the baseline every learned generator is compared with, and the fallback for anything
a model cannot handle (sketches with instructions it never saw, slots the language leaves to TVM).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tvm.target import Target

from ..hardware import profile_from_target
from ..language import Decision, DecodingState, Filter, Sketch, device_filters
from .base import Generator, Proposal


class PriorGenerator(Generator):
    """Uniform over legal tokens at every step, sketches chosen uniformly.

    ``filters`` are extra legality masks (e.g. device limits) applied at every step. Compute
    locations are left to TVM's sampler (decision None), which is uniform over the legal ones:
    decoding them here (``tvm_locations=False``, from ``Sketch.legal_locations``) replays the
    prefix once per location slot, which costs more than the exact replay saves over a module
    trace (``Sketch.apply``) on sketches with several location slots.
    """

    def __init__(self, filters: Sequence[Filter] = (), tvm_locations: bool = True,
                 device_limits: bool = True) -> None:  # fmt: skip
        self.filters = tuple(filters)
        self.tvm_locations = tvm_locations
        self.device_limits = device_limits
        self.device: tuple[Filter, ...] = ()

    def prepare(self, target: Target) -> None:
        """With ``device_limits``, the target's device limits become masks (threads per block)."""
        self.device = ()
        if self.device_limits:
            try:
                self.device = tuple(device_filters(profile_from_target(target)))
            except ValueError:
                pass  # a target no profile describes: structural masks only

    def describe(self) -> str:
        return "prior"

    @property
    def mixes_prior(self) -> bool:
        return True

    def sample(self, sketch: Sketch, rng: np.random.Generator) -> list[Decision]:
        state = DecodingState(sketch, self.filters + self.device, tvm_locations=self.tvm_locations)
        while not state.done:
            legal = state.legal_tokens()
            state.step(legal[int(rng.integers(len(legal)))])
        return state.decisions()

    def generate(self, sketches: Sequence[Sketch], num: int, rng: np.random.Generator) -> list[Proposal]:
        picks = rng.integers(len(sketches), size=num)
        return [Proposal(int(i), self.sample(sketches[int(i)], rng)) for i in picks]
