"""A measurement's latency as every layer reads it: the mean of its run seconds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def mean_latency(run_secs: Sequence[Any] | None) -> float:
    """Mean seconds of a record's or runner result's ``run_secs``; inf when it did not run."""
    return float(np.mean([float(s) for s in run_secs])) if run_secs else float("inf")
