"""What the cost model sees of a candidate: MetaSchedule's own per-store features, pooled, plus the
device's standardized 24-D hardware vector (so one model serves every device).

``PerStoreFeature`` gives one 164-number row per buffer store of the lowered program; a candidate
becomes the sum, mean and max of its rows (the sum is what MetaSchedule's XGB model regresses,
store by store), then the hardware vector. The layout is part of a trained model (``LAYOUT``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tvm.s_tir.meta_schedule import TuneContext
from tvm.s_tir.meta_schedule.feature_extractor import PerStoreFeature
from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate

from ..hardware import VECTOR_DIM

STORE_DIM = 164  # PerStoreFeature's row with its default settings (TVM 0.27)
POOLS = ("sum", "mean", "max")
LAYOUT = {"per_store": STORE_DIM, "pools": list(POOLS), "hardware": VECTOR_DIM}
FEATURE_DIM = STORE_DIM * len(POOLS) + VECTOR_DIM

_EXTRACTOR = PerStoreFeature()


def pool(rows: np.ndarray) -> np.ndarray:
    """One candidate's per-store rows (stores x 164) as one fixed-size vector."""
    if rows.size == 0:
        return np.zeros(STORE_DIM * len(POOLS), dtype=np.float32)
    return np.concatenate([rows.sum(0), rows.mean(0), rows.max(0)]).astype(np.float32)


def candidate_features(context: TuneContext, candidates: Sequence[MeasureCandidate],
                       hardware: np.ndarray) -> np.ndarray:  # fmt: skip
    """(candidates x FEATURE_DIM) for ``candidates`` of ``context``'s task on a device whose
    standardized vector is ``hardware``."""
    if not candidates:
        return np.zeros((0, FEATURE_DIM), dtype=np.float32)
    pooled = [pool(x.numpy().astype(np.float32)) for x in _EXTRACTOR.extract_from(context, list(candidates))]
    device = np.broadcast_to(np.asarray(hardware, dtype=np.float32), (len(pooled), VECTOR_DIM))
    return np.hstack([np.stack(pooled), device])
