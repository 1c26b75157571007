"""Training and judging the shipped cost model on measured records.

Every (task, profile) of the source records is one ranking group: features of each record's
schedule (``costmodel.features``: pooled per-store features + the profile's standardized vector)
and its normalized throughput (the group's best latency / its latency; 0 for a failed run).
xgboost learns a within-group ranking (``rank:pairwise``): what a search needs is the order of
one task's candidates on one device, not absolute latencies across tasks. The held-out tasks and
profile never train it; ``evaluate`` judges a model on any database (the held-out reference),
beside random scores and, given a second database, in-tune cost models fit per task on that task's
records there (what a tuning's own model knows after one tune).
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tvm_ffi
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate
from tvm.target import Target

from ..costmodel import Pretrained, candidate_features
from ..data.collect import open_database
from ..data.split import heldout_tasks, source_profiles
from ..data.stats import data_fingerprint
from ..hardware import HardwareProfile, Standardizer, get_profile, universe_standardizer
from ..tvm_glue import TVM_ERRORS, load_tensor_intrinsics, mean_latency
from ..workloads.tasks import load_tasks

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CostModelConfig:
    """xgboost settings of the pretrained ranker; ``limit`` reads only each database's first records."""

    rounds: int = 300
    max_depth: int = 6
    eta: float = 0.1
    subsample: float = 0.8
    colsample_bytree: float = 0.5
    threads: int = 2
    limit: int | None = None


@dataclass
class Group:
    """One (task, profile): its records' features and normalized throughputs; ``learned``: the
    scores of the same records by each in-tune learner of ``record_groups(fresh=...)``."""

    task: str
    profile: str
    features: np.ndarray
    labels: np.ndarray
    learned: dict[str, np.ndarray] = field(default_factory=dict)


def _replayed(mod, records: list) -> tuple[list[MeasureCandidate], list]:
    """The records' schedules as measure candidates, and their run_secs (records that no longer
    replay on ``mod`` are left out)."""
    candidates, run_secs = [], []
    for record in records:
        sch = Schedule(mod, debug_mask="none", error_render_level="none")
        try:
            record.trace.apply_to_schedule(sch, remove_postproc=False)
        except TVM_ERRORS:
            continue
        candidates.append(MeasureCandidate(sch, record.args_info))
        run_secs.append(record.run_secs)
    return candidates, run_secs


def fresh_xgb() -> ms.CostModel:
    """MetaSchedule's own XGB cost model as a tune of evolutionary search starts it, its 100-sample
    warm-up lifted (with it, a 64-trial tune's model scores at random): its best case."""
    return ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=1)


def learned_scores(learner: ms.CostModel, context: ms.TuneContext, seen: list[MeasureCandidate], seen_secs: list,
                   candidates: list[MeasureCandidate]) -> np.ndarray:  # fmt: skip
    """``learner`` (a new in-tune cost model) updated on ``seen`` (one tune's measurements),
    scoring ``candidates``."""
    results = [ms.runner.RunnerResult(run_secs=secs if len(secs) else None, error_msg=None if len(secs) else "failed")
               for secs in seen_secs]  # fmt: skip
    learner.update(context, seen, results)
    return np.asarray(learner.predict(context, candidates), dtype=np.float64)


def record_groups(database: ms.database.Database, profile: HardwareProfile, standardizer: Standardizer,
                  exclude: list, limit: int | None = None, fresh: ms.database.Database | None = None,
                  learners: dict[str, Callable[[], ms.CostModel]] | None = None) -> list[Group]:  # fmt: skip
    """One ``Group`` per workload of ``database`` (records of ``profile``), ``exclude`` skipped;
    with ``fresh``, each group is also scored by each of ``learners`` (default: the fresh XGB), a new
    one per group fit on that workload's measured records in ``fresh`` (none where it lacks them)."""
    target = Target(profile.target)
    load_tensor_intrinsics(target)
    hardware = standardizer(profile).astype(np.float32)
    by_workload: dict[int, list] = {}
    for record in list(database.get_all_tuning_records())[:limit]:
        by_workload.setdefault(int(tvm_ffi.structural_hash(record.workload.mod)), []).append(record)
    groups = []
    for records in by_workload.values():
        mod = records[0].workload.mod
        if any(tvm_ffi.structural_equal(mod, other) for other in exclude):
            continue
        context = ms.TuneContext(mod=mod, target=target, num_threads=1)
        candidates, run_secs = _replayed(mod, records)
        costs_np = np.asarray([mean_latency(secs) for secs in run_secs])
        if np.isfinite(costs_np).sum() < 2:
            continue  # nothing to rank
        labels = np.where(np.isfinite(costs_np), costs_np[np.isfinite(costs_np)].min() / costs_np, 0.0)
        name = _task_names().get(int(tvm_ffi.structural_hash(mod)), "unknown task")
        group = Group(name, profile.name, candidate_features(context, candidates, hardware), labels)
        if fresh is not None and fresh.has_workload(mod):
            seen, seen_secs = _replayed(mod, list(fresh.get_top_k(fresh.commit_workload(mod), 1 << 30)))
            group.learned = {name: learned_scores(make(), context, seen, seen_secs, candidates)
                             for name, make in (learners or {"fresh": fresh_xgb}).items() if seen}  # fmt: skip
        groups.append(group)
    return groups


@functools.lru_cache(maxsize=1)
def _task_names() -> dict[int, str]:
    return {int(tvm_ffi.structural_hash(t.mod)): t.name for t in load_tasks()}


def train_cost_model(data_dir: str | Path, out: str | Path, config: CostModelConfig = CostModelConfig(),
                     profiles: list[str] | None = None, command: str = "") -> dict:  # fmt: skip
    """Train on every source profile's records under ``data_dir`` and save the folder ``out``."""
    import xgboost as xgb  # start-up cost: only when training

    root = Path(data_dir)
    names = source_profiles(root, profiles)
    standardizer = universe_standardizer()
    exclude = [t.mod for t in heldout_tasks()]
    data_version = data_fingerprint(root, names)  # before reading: a collection may append meanwhile
    groups: list[Group] = []
    for name in names:
        found = record_groups(open_database(root / name), get_profile(name), standardizer, exclude, config.limit)
        logger.info("%s: %d groups, %d records", name, len(found), sum(len(g.labels) for g in found))
        groups += found
    if not groups:
        raise ValueError(f"no rankable records under {data_dir} (profiles {', '.join(names) or 'none'})")
    data = xgb.DMatrix(np.vstack([g.features for g in groups]), label=np.concatenate([g.labels for g in groups]))
    data.set_group([len(g.labels) for g in groups])
    params = {"objective": "rank:pairwise", "max_depth": config.max_depth, "eta": config.eta,
              "subsample": config.subsample, "colsample_bytree": config.colsample_bytree,
              "nthread": config.threads, "verbosity": 0, "seed": 0}  # fmt: skip
    booster = xgb.train(params, data, num_boost_round=config.rounds)
    summary = {"profiles": names, "groups": len(groups), "records": int(sum(len(g.labels) for g in groups)),
               "config": asdict(config), "command": command, "date": datetime.date.today().isoformat(),
               "data": data_version}  # fmt: skip
    sources = {name: standardizer(get_profile(name)).astype(np.float32) for name in names}
    Pretrained(booster, standardizer, sources, {"trained": summary}).save(out)
    return summary


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    rank_a, rank_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(rank_a, rank_b)[0, 1]) if len(a) > 2 and rank_a.std() and rank_b.std() else float("nan")


def top_recall(labels: np.ndarray, scores: np.ndarray, true_share: float = 0.05, predicted_share: float = 0.10) -> float:
    """Share of the truly best ``true_share`` that the ``predicted_share`` best-scored contain."""
    n = len(labels)
    truth = set(np.argsort(-labels)[: max(1, int(round(n * true_share)))].tolist())
    chosen = set(np.argsort(-scores)[: max(1, int(round(n * predicted_share)))].tolist())
    return len(truth & chosen) / len(truth)


def evaluate(model: Pretrained, groups: list[Group], seed: int = 0) -> list[dict]:
    """Per group: Spearman rank correlation and top-5 %-in-top-10 % recall of the model, of random
    scores (what every in-tune model returns before 100 samples) and of the group's learners."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in groups:
        scorers = {"": model.margin(g.features), "random_": rng.random(len(g.labels))}
        scorers |= {f"{name}_": scores for name, scores in g.learned.items()}
        row = {"task": g.task, "profile": g.profile, "records": len(g.labels)}
        for prefix, scores in scorers.items():
            row |= {f"{prefix}spearman": spearman(g.labels, scores), f"{prefix}recall": top_recall(g.labels, scores)}
        rows.append(row)
    return rows
