"""The one error every command raises for bad input (printed as one line, exit code 2), and the
checks of inputs every command shares, done before any heavy start-up."""

from __future__ import annotations

import os
from pathlib import Path

SEED_MAX = 2**31 - 2  # TVM takes seeds 0 .. 2^31 - 2 (its random engine's range)


class UsageError(Exception):
    """Bad command-line input; the message says what was wrong and what is valid."""


def check_seed(seed: int | None, option: str = "--seed") -> None:
    if seed is not None and not 0 <= seed <= SEED_MAX:
        raise UsageError(f"{option} must be between 0 and {SEED_MAX}, not {seed}")


def check_writable_dir(path: str | Path, option: str) -> None:
    """``path`` is (or can be made) a folder this process can write: not a file, not read-only."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a folder; give a folder (it is created if missing)")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: {existing} is not writable; give a folder you can write")


def check_positive(value: int, option: str) -> None:
    if value < 1:
        raise UsageError(f"{option} must be at least 1, not {value}")
