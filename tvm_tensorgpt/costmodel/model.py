"""``cost_model="tensorgpt"``: a pretrained, hardware-aware cost model that ranks from trial 0.

MetaSchedule's XGB model returns random scores until it holds 100 samples, so in a 64-trial tune it
never ranks anything. This one ships trained (``train/costmodel.py``) on the source profiles'
records, with the device's standardized hardware vector among its features, so it is warm on any
device with a profile. During a tune it keeps learning from each task's measurements: a small
residual booster per task, fitted with the pretrained margin as its base margin, so the first
measurements refine the ranking instead of replacing it.

Scores are the sigmoid of the margin: comparable within a task (what a search ranks), in (0, 1).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule import TuneContext
from tvm.s_tir.meta_schedule.cost_model import PyCostModel
from tvm.s_tir.meta_schedule.runner import RunnerResult
from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate
from tvm.target import Target

from ..hardware import ProfileError, Standardizer, profile_from_target
from ..hardware.vector import cosine_similarity
from ..tvm_glue import mean_latency
from .features import FEATURE_DIM, LAYOUT, candidate_features

logger = logging.getLogger(__name__)

DEFAULT_COST_MODEL = Path(__file__).parent / "default"
BOOSTER_FILE = "model.json"  # xgboost's own JSON format: no pickle
META_FILE = "meta.json"


class CostModelError(ValueError):
    """A cost-model folder that cannot be used; the message says which file and how to rebuild it."""


@dataclass(frozen=True)
class ResidualConfig:
    """The per-task residual booster: ``rounds`` shallow trees once a task has ``min_samples``
    measurements (refit after every update: a task holds at most a few hundred)."""

    min_samples: int = 4
    rounds: int = 20
    max_depth: int = 3
    eta: float = 0.2


@dataclass
class Pretrained:
    """The shipped booster, the standardization its hardware vectors used, and its source devices."""

    booster: Any  # xgboost.Booster
    standardizer: Standardizer
    sources: dict[str, np.ndarray]  # source profile -> standardized vector
    meta: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> Pretrained:
        import xgboost as xgb  # start-up cost: builder workers import the package, never score

        path = Path(path)
        files = [path / BOOSTER_FILE, path / META_FILE]
        missing = [f.name for f in files if not f.exists()]
        if missing:
            raise CostModelError(f"cost model {path} lacks {', '.join(missing)}; train one with "
                                 "`python -m tvm_tensorgpt.train.costmodel --out FOLDER` (docs/costmodel.md)")  # fmt: skip
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        if meta.get("layout") != LAYOUT:
            raise CostModelError(f"cost model {path} was trained on features {meta.get('layout')}, this package "
                                 f"extracts {LAYOUT}; retrain it")  # fmt: skip
        booster = xgb.Booster()
        booster.load_model(str(path / BOOSTER_FILE))
        booster.set_param({"nthread": 1})
        sources = {name: np.asarray(v, dtype=np.float32) for name, v in meta["sources"].items()}
        return cls(booster, Standardizer.from_dict(meta["standardizer"]), sources, meta)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.booster.save_model(str(path / BOOSTER_FILE))
        meta = {**self.meta, "layout": LAYOUT, "standardizer": self.standardizer.to_dict(),
                "sources": {k: [float(x) for x in v] for k, v in self.sources.items()}}  # fmt: skip
        (path / META_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return path

    def margin(self, features: np.ndarray) -> np.ndarray:
        import xgboost as xgb  # see load

        return self.booster.predict(xgb.DMatrix(features), output_margin=True).astype(np.float64)


@dataclass
class _Task:
    """One task's measurements: features, latencies (inf = failed) and the residual booster."""

    features: list[np.ndarray] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    residual: Any = None


@derived_object
class TensorGPTCostModel(PyCostModel):
    """A MetaSchedule ``CostModel``: the pretrained ranker plus a per-task residual.

    ``path`` is a cost-model folder (default: the one bundled in the package). ``num_tuning_cores``
    and ``tree_method`` are what MetaSchedule passes every cost model; they are accepted and unused.
    Features are kept for the last ``FEATURE_CACHE`` modules scored (by structural hash): a search
    that ranks a candidate again (the strategy's carried pool, a re-scored population) or learns
    from one it ranked pays for the lowering once.
    """

    FEATURE_CACHE = 8192  # modules (about 2 KB of features each)

    def __init__(self, path: str | Path = DEFAULT_COST_MODEL, residual: ResidualConfig = ResidualConfig(),
                 num_tuning_cores: Any = None, tree_method: Any = None) -> None:  # fmt: skip
        self.pretrained = Pretrained.load(path)
        self.residual = residual
        self.tasks: dict[int, _Task] = {}
        self._devices: dict[str, np.ndarray] = {}
        self._features: OrderedDict[tuple[int, str], np.ndarray] = OrderedDict()

    # --- the CostModel interface ----------------------------------------------------------
    def load(self, path: str) -> None:
        self.pretrained = Pretrained.load(path)
        self.tasks.clear()

    def save(self, path: str) -> None:
        self.pretrained.save(path)

    def update(self, context: TuneContext, candidates: list[MeasureCandidate], results: list[RunnerResult]) -> None:
        if not candidates:
            return
        task = self.tasks.setdefault(int(tvm_ffi.structural_hash(context.mod)), _Task())
        task.features += list(self.features(context, candidates))
        task.costs += [mean_latency(r.run_secs) for r in results]
        task.residual = self._fit_residual(task)

    def predict(self, context: TuneContext, candidates: list[MeasureCandidate]) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        features = self.features(context, candidates)
        margin = self.pretrained.margin(features)
        task = self.tasks.get(int(tvm_ffi.structural_hash(context.mod)))
        if task is not None and task.residual is not None:
            import xgboost as xgb  # see Pretrained.load

            margin = task.residual.predict(xgb.DMatrix(features, base_margin=margin), output_margin=True)
        return (1.0 / (1.0 + np.exp(-np.asarray(margin, dtype=np.float64)))).astype(np.float64)

    # --- helpers ----------------------------------------------------------------------------
    def features(self, context: TuneContext, candidates: list[MeasureCandidate]) -> np.ndarray:
        """Each candidate's features: from the cache, or extracted (all the missing ones in one call)."""
        target = str(context.target)
        keys = [(int(tvm_ffi.structural_hash(c.sch.mod)), target) for c in candidates]
        rows = {key: self._features[key] for key in keys if key in self._features}
        missing = {key: c for key, c in zip(keys, candidates) if key not in rows}
        if missing:
            rows.update(zip(missing, candidate_features(context, list(missing.values()),
                                                        self.device_vector(context.target))))  # fmt: skip
        for key, row in rows.items():
            self._features[key] = row
            self._features.move_to_end(key)
        while len(self._features) > self.FEATURE_CACHE:
            self._features.popitem(last=False)
        return np.stack([rows[key] for key in keys]) if keys else np.zeros((0, FEATURE_DIM), dtype=np.float32)

    def device_vector(self, target: Target) -> np.ndarray:
        """The target's standardized hardware vector (the mean device where no profile describes
        it), logged once per target with its nearest source device."""
        key = str(target)
        if key not in self._devices:
            try:
                profile = profile_from_target(target)
                vector = self.pretrained.standardizer(profile).astype(np.float32)
                names = list(self.pretrained.sources)
                cosines = cosine_similarity(vector[None], np.stack([self.pretrained.sources[n] for n in names]))[0]
                best = int(np.argmax(cosines))
                logger.info("TensorGPT cost model: %s; nearest source device %s (cosine %.2f)", profile.name,
                            names[best], cosines[best])  # fmt: skip
            except ProfileError as err:
                vector = np.zeros(len(self.pretrained.standardizer.mean), dtype=np.float32)
                logger.warning("TensorGPT cost model: no hardware profile for %s (%s); scoring it as the mean "
                               "device", key, err)  # fmt: skip
            self._devices[key] = vector
        return self._devices[key]

    def _fit_residual(self, task: _Task) -> Any:
        """A few trees on the task's measurements over the pretrained margin (None: too few)."""
        import xgboost as xgb  # see Pretrained.load

        costs = np.asarray(task.costs)
        if np.isfinite(costs).sum() < self.residual.min_samples:
            return None
        features = np.stack(task.features)
        labels = np.where(np.isfinite(costs), costs[np.isfinite(costs)].min() / costs, 0.0)
        data = xgb.DMatrix(features, label=labels, base_margin=self.pretrained.margin(features))
        data.set_group([len(labels)])
        params = {"objective": "rank:pairwise", "max_depth": self.residual.max_depth, "eta": self.residual.eta,
                  "nthread": 1, "verbosity": 0}  # fmt: skip
        return xgb.train(params, data, num_boost_round=self.residual.rounds)

