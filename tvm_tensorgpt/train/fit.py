"""How well a checkpoint fits held-out records, against the uniform prior it must beat.

For every record of the held-out tasks in a data folder (one database per profile): its decisions
are read from its trace on the design space it came from, then walked token by token under the
language's masks. At each step with more than one legal token, the model's probability of the
record's token (its softmax renormalised over the legal tokens, as masked decoding samples) and
the prior's (1 / number of legal tokens) are scored. Per task and overall:

- **fit**: nats per scored decision token, model vs prior (lower is better; a model that learned
  nothing useful about these tasks is at or above the prior);
- **fit on the fastest quarter** of each task's records: the reference records are early rounds of
  an evolutionary search whose cost model is untrained, mostly random draws close to the uniform
  prior, which therefore fits *all* of them well by construction; a generator is meant to make fast
  schedules likely, so the fastest quarter is where it must beat the prior;
- **per-token mixtures with the prior**: the same for ``(1 - λ) * model + λ * uniform`` per step,
  what the generator samples with ``SamplingConfig.prior_mix`` = λ (λ = 0: the model alone);
- **ranking**: Spearman correlation between a record's log-likelihood under the model and its
  measured throughput (positive: the model prefers faster schedules); the prior ranks nothing.

``shipping_verdict`` is the data issue's rule for the bundled checkpoint: it must beat the prior
here and rank held-out records by speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import tvm_ffi

from ..data.collect import open_database
from ..data.split import HELDOUT_TASKS
from ..hardware import HardwareProfile, get_profile
from ..hardware.vector import Standardizer
from ..language import Sketch, device_filters
from ..model import TensorGPTNetwork, legal_token_probabilities
from ..tvm_glue import TVM_ERRORS, design_spaces, mean_latency
from ..workloads.features import workload_features
from ..workloads.tasks import get_task
from .costmodel import spearman

FAST = 0.25  # the fastest quarter of a task's records: what a generator should make likely


def score(net: TensorGPTNetwork, standardizer: Standardizer, profile: HardwareProfile, sketch: Sketch,
          decisions: list) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Per scored decision token of one record (a step with more than one legal token): the model's
    probability of the record's token over the legal ones, and how many tokens were legal."""
    config = net.config
    hardware = torch.tensor(standardizer(profile), dtype=torch.float32)
    workload = torch.tensor(workload_features(sketch.mod)) if config.experts and config.workload_aware else None
    probs, legal_counts = legal_token_probabilities(
        net, sketch, decisions, config.hardware_tokens(profile),
        hardware if config.hardware_grounding or config.experts else None, device_filters(profile), workload)  # fmt: skip
    return probs[0], legal_counts


def task_row(records: list[tuple[np.ndarray, np.ndarray, float]], mixes: Sequence[float]) -> dict:
    """One task's fit (all records and the fastest quarter) and ranking, per prior mix."""
    latency = np.asarray([r[2] for r in records])
    finite = np.isfinite(latency)
    fast = latency <= np.quantile(latency[finite], FAST)
    prior_ll = np.asarray([-np.log(n).sum() for _, n, _ in records])
    tokens = np.asarray([len(p) for p, _, _ in records])
    row = {"records": len(records), "tokens": int(tokens.sum()), "fast_tokens": int(tokens[fast].sum()),
           "prior_nats_per_token": float(-prior_ll.sum() / tokens.sum()),
           "fast_prior_nats_per_token": float(-prior_ll[fast].sum() / tokens[fast].sum()), "mix": {}}  # fmt: skip
    for mix in mixes:
        model_ll = np.asarray([np.log((1 - mix) * p + mix / n).sum() for p, n, _ in records])
        row["mix"][str(mix)] = {
            "model_nats_per_token": float(-model_ll.sum() / tokens.sum()),
            "fast_model_nats_per_token": float(-model_ll[fast].sum() / tokens[fast].sum()),
            "likelihood_speed_spearman": spearman(model_ll[finite], 1 / latency[finite]),
        }
    return row


def summarise(rows: list[dict], mixes: Sequence[float]) -> dict:
    """Per-token figures over all tasks (each task weighted by its scored tokens), per prior mix."""

    def per_token(get, weight: str) -> float:
        return sum(get(r) * r[weight] for r in rows) / sum(r[weight] for r in rows)

    out = {"prior_nats_per_token": per_token(lambda r: r["prior_nats_per_token"], "tokens"),
           "fast_prior_nats_per_token": per_token(lambda r: r["fast_prior_nats_per_token"], "fast_tokens"), "mix": {}}  # fmt: skip
    for key in map(str, mixes):
        out["mix"][key] = {
            "model_nats_per_token": per_token(lambda r: r["mix"][key]["model_nats_per_token"], "tokens"),
            "fast_model_nats_per_token": per_token(lambda r: r["mix"][key]["fast_model_nats_per_token"], "fast_tokens"),
            "mean_likelihood_speed_spearman": float(np.nanmean([r["mix"][key]["likelihood_speed_spearman"] for r in rows])),
        }  # fmt: skip
    return out


def heldout_fit(net: TensorGPTNetwork, standardizer: Standardizer, data_dir: str | Path,
                mixes: Sequence[float] = (0.0,), tasks: Sequence[str] = HELDOUT_TASKS) -> dict:  # fmt: skip
    """``{"summary", "tasks"}`` over the held-out tasks' records in ``data_dir`` (a folder of
    profile databases, e.g. data/reference). ``tasks``: other tasks instead (e.g. training tasks,
    to see how much better the model fits what it learnt from: the gap is what fails to transfer)."""
    heldout = {int(tvm_ffi.structural_hash(get_task(name).mod)): name for name in tasks}
    folders = sorted(p for p in Path(data_dir).iterdir() if p.is_dir()) if Path(data_dir).is_dir() else []
    net.eval()
    rows = []
    for folder in folders:
        profile = get_profile(folder.name)
        by_task: dict[str, list] = {}
        sketches: dict[str, list[Sketch]] = {}
        for record in open_database(folder).get_all_tuning_records():
            name = heldout.get(int(tvm_ffi.structural_hash(record.workload.mod)))
            if name is None:
                continue
            if name not in sketches:
                mod = get_task(name).mod
                sketches[name] = [Sketch.from_schedule(mod, s) for s in design_spaces(mod, profile.target)[1]]
            for sketch in sketches[name]:
                try:
                    probs, legal_counts = score(net, standardizer, profile, sketch, sketch.read_decisions(record.trace))
                except (ValueError, *TVM_ERRORS):
                    continue  # the record came from another design space
                by_task.setdefault(name, []).append((probs, legal_counts, mean_latency(record.run_secs)))
                break
        rows += [{"task": name, "profile": folder.name} | task_row(records, mixes) for name, records in by_task.items()
                 if any(len(probs) for probs, _, _ in records)]  # a task with no choice to make says nothing
    if not rows:
        raise ValueError(f"no measured record of the tasks asked for in {data_dir} (one database per profile, e.g. "
                         "data/reference; `tensorgpt collect --tasks heldout --data-dir data/reference` makes them)")  # fmt: skip
    return {"summary": summarise(rows, mixes), "tasks": rows}


def shipping_verdict(summary: dict, mix: float = 0.0) -> tuple[bool, str]:
    """The rule a bundled checkpoint must pass, and a line with its numbers: sampled with
    ``prior_mix`` = ``mix``, it fits the held-out records better than the uniform prior and its
    likelihood ranks them by speed (mean Spearman over tasks above 0)."""
    row = summary["mix"][str(mix)]
    model, prior, rank = row["model_nats_per_token"], summary["prior_nats_per_token"], row["mean_likelihood_speed_spearman"]
    line = (f"held-out fit {model:.3f} nats/token vs the uniform prior's {prior:.3f} (prior_mix {mix}); "
            f"likelihood-speed Spearman {rank:+.2f}")  # fmt: skip
    return bool(model < prior and rank > 0), line
