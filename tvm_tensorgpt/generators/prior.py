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
from ..language.constraints import UNKNOWN
from .base import Generator, Proposal


class PriorGenerator(Generator):
    """Uniform over legal tokens at every step, sketches chosen uniformly.

    ``filters`` are extra legality masks (e.g. device limits) applied at every step. Compute
    locations whose legal set the sketch knows without a replay (``Sketch.known_locations``: a
    structure learned while the model decoded) are drawn here; the others are left to TVM's
    sampler (decision None), which is uniform over the same legal set (``tvm_locations``: see
    ``DecodingState``). A location left to TVM makes the candidate's replay exact, a trial
    compute-at per loop: the prior's 178 candidates of a tune took 1.9 s to make that way on the
    held-out ResNet-50 conv and 3.1 s on a conv3d, against 1.0 s and 1.3 s with every location
    decoded (``benchmarks/results/prior_locations_emr.json``); but decoding a location whose set is
    not known replays the prefix per row, which costs more on sketches with many location
    structures (a softmax: 1.9 s against 0.6-0.8 s). ``tvm_locations=False`` decodes every location
    (replaying where needed), True leaves all to TVM.
    """

    def __init__(self, filters: Sequence[Filter] = (), tvm_locations: bool | str = UNKNOWN,
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
