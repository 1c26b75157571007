"""The interface between the search strategy and whatever proposes decisions.

``Generator`` is what ``TensorGPTSearchStrategy`` asks each round for decision sets; the learned
TensorGPT model implements it (``generators.model``), and so does the prior (``generators.prior``).
Subclass it to plug in another proposer, as MetaSchedule's ``Py*`` classes are subclassed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tvm.target import Target

from ..language import Decision, Sketch


@dataclass(frozen=True)
class Proposal:
    """One proposed decision set for ``sketches[sketch_index]``; ``origin`` names the generator
    that made it inside a mixture (``Generator.origin``), so a tune can say which part proposed what."""

    sketch_index: int
    decisions: list[Decision]
    origin: str = ""


class Generator(ABC):
    """Proposes decision sets for a task's sketches; subclass it to plug in a model."""

    def prepare(self, target: Target) -> None:
        """Called with the tuning's target before the first ``generate`` (e.g. to find the device)."""

    @abstractmethod
    def generate(self, sketches: Sequence[Sketch], num: int, rng: np.random.Generator) -> list[Proposal]:
        """``num`` proposals spread over ``sketches`` (legal under the language's masks)."""

    def observe(self, sketch: Sketch, decisions: Sequence[Decision], latency_s: float | None) -> None:
        """A measured result (None = failed to build or run), for online adaptation."""

    def describe(self) -> str:
        """What proposes (shown in tuning results)."""
        return type(self).__name__

    @property
    def origin(self) -> str:
        """A short name for its proposals in tuning statistics: ``ModelGenerator`` -> "model"."""
        return type(self).__name__.removesuffix("Generator").lower()

    @property
    def mixes_prior(self) -> bool:
        """Whether the uniform prior is already part of what it proposes (then the search strategy
        does not mix it in again, see ``SearchConfig.prior_share``)."""
        return False
