"""Generators: what proposes decision sets to the search strategy.

Shaped like MetaSchedule's own folders: the ``Generator`` base (``base``), the uniform prior
(``prior``), a weighted mixture of generators (``mixture``), the model-backed generator (``model``, torch), the torch-free ``resolve_generator``
that turns a spec ("default", "prior", a checkpoint folder) into one, and the CUDA validity check
of their proposals (``validity``). Importing this package does not import torch.
"""

from .base import Generator, Proposal
from .mixture import MixtureGenerator
from .prior import PriorGenerator
from .resolve import GENERATOR_NAMES, check_generator_spec, resolve_generator

__all__ = ["GENERATOR_NAMES", "Generator", "MixtureGenerator", "PriorGenerator", "Proposal", "check_generator_spec", "resolve_generator"]
