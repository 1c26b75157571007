"""What a generator spec means: the one place the strategy, the CLI and the benchmarks resolve it.

Torch-free on purpose: ``import tvm_tensorgpt`` (and every builder worker) imports the plugin,
which imports this; the model-backed generator, and torch with it, load only when asked for.
"""

from __future__ import annotations

from pathlib import Path

from .base import Generator
from .prior import PriorGenerator

# The names a generator spec may take besides a checkpoint folder or a Generator.
GENERATOR_NAMES = ("default", "prior")


def check_generator_spec(spec: Generator | str | Path | None) -> None:
    """Refuse a spec that names nothing (cheap: no torch, no checkpoint read)."""
    if isinstance(spec, Generator) or spec is None or spec in GENERATOR_NAMES or Path(spec).is_dir():
        return
    raise ValueError(f"generator {spec!r} is neither {' nor '.join(GENERATOR_NAMES)} nor a checkpoint folder "
                     "(one written by `tensorgpt train` or `tensorgpt bundle`)")  # fmt: skip


def resolve_generator(spec: Generator | str | Path | None) -> Generator:
    """``None``/"default" → the bundled checkpoint; "prior" → uniform legal sampling; a path → that
    checkpoint folder; a ``Generator`` is used as is."""
    if isinstance(spec, Generator):
        return spec
    if spec == "prior":
        return PriorGenerator()
    check_generator_spec(spec)
    from .model import ModelGenerator, default_generator  # torch: loaded only when a model is used

    return default_generator() if spec is None or spec == "default" else ModelGenerator.from_checkpoint(spec)
