"""How well a checkpoint fits held-out records, against the uniform prior it must beat.

    python benchmarks/fit.py [--checkpoint tvm_tensorgpt/model/default] [--data-dir data/reference]
        [--prior-mix 0,0.25,0.5,0.75] [--out benchmarks/results/fit.json]

For every record of the held-out tasks in ``--data-dir`` (one folder per profile): its decisions
are read from its trace on the design space it came from, then walked token by token under the
language's masks. At each step with more than one legal token, the model's probability of the
record's token (its softmax renormalised over the legal tokens, as masked decoding samples) and
the prior's (1 / number of legal tokens) are scored. Reported per task and overall:

- **fit**: nats per scored decision token, model vs prior (lower is better; a model that learned
  nothing useful about these tasks is at or above the prior);
- **fit on the fastest quarter**: the same over each task's fastest 25 % of records. The reference
  records are the first rounds of an evolutionary search whose cost model is still untrained: mostly
  random draws from the design space, i.e. from a distribution close to the uniform prior, which
  therefore fits *all* of them well by construction. A generator is meant to make fast schedules
  likely, so the fastest quarter is where it must beat the prior;
- **per-token mixtures with the prior** (``--prior-mix``): the same for the distribution the generator
  samples with ``SamplingConfig.prior_mix`` = λ, i.e. ``(1 - λ) * model + λ * uniform`` per step
  (λ = 0: the model alone);
- **ranking**: Spearman correlation between a record's log-likelihood under the model and its
  measured throughput (positive: the model prefers faster schedules). The prior's log-likelihood
  is the same for all records of a sketch, so it ranks nothing.

The issue asks that a checkpoint is shipped only when it beats the prior here and ranks positively.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
import tvm_ffi
from common import RESULTS, ROOT, command_line, provenance

from tvm_tensorgpt.data.collect import open_database
from tvm_tensorgpt.data.split import HELDOUT_TASKS
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import VOCAB, DecodingState, Sketch, device_filters, prompt_tokens, response_tokens
from tvm_tensorgpt.model import checkpoint
from tvm_tensorgpt.train.costmodel import spearman
from tvm_tensorgpt.tvm_glue import TVM_ERRORS, design_spaces, mean_latency
from tvm_tensorgpt.workloads.features import workload_features
from tvm_tensorgpt.workloads.tasks import get_task

FAST = 0.25  # the fastest quarter of a task's records: what a generator should make likely

HELDOUT = {int(tvm_ffi.structural_hash(get_task(name).mod)): name for name in HELDOUT_TASKS}


def score(net, standardizer, profile, sketch: Sketch, decisions) -> tuple[np.ndarray, np.ndarray]:
    """Per scored decision token of one record (a step with more than one legal token): the model's
    probability of the record's token over the legal ones, and how many tokens were legal."""
    config = net.config
    prompt = VOCAB.encode(prompt_tokens(sketch, config.hardware_tokens(profile)))
    response = response_tokens(sketch, decisions)
    ids = torch.tensor([prompt + VOCAB.encode(response)])
    hardware = torch.tensor(standardizer(profile), dtype=torch.float32)[None]
    workload = torch.tensor(workload_features(sketch.mod))[None] if config.experts and config.workload_aware else None
    with torch.no_grad():
        logits, _ = net(ids, torch.ones_like(ids), hardware if config.hardware_grounding or config.experts else None,
                        workload=workload)  # fmt: skip
    state = DecodingState(sketch, tuple(device_filters(profile)))
    probs, legal_counts = [], []
    for position, token in enumerate(response):
        legal = state.legal_tokens()
        if len(legal) > 1:
            row = logits[0, len(prompt) + position - 1, [VOCAB.id(t) for t in legal]]
            probs.append(float(torch.softmax(row, dim=0)[legal.index(token)]))
            legal_counts.append(len(legal))
        state.step(token)
    return np.asarray(probs), np.asarray(legal_counts, dtype=float)


def task_row(records: list[tuple[np.ndarray, np.ndarray, float]], mixes: list[float]) -> dict:
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


def summarise(rows: list[dict], mixes: list[float]) -> dict:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(checkpoint.DEFAULT_CHECKPOINT))
    parser.add_argument("--data-dir", default=str(ROOT / "data" / "reference"))
    parser.add_argument("--prior-mix", default="0,0.25,0.5,0.75",
                        help="per-token mixtures with the uniform prior to score (SamplingConfig.prior_mix)")
    parser.add_argument("--out", default=str(RESULTS / "fit.json"))
    args = parser.parse_args()
    mixes = [float(x) for x in args.prior_mix.split(",")]
    torch.set_num_threads(1)
    net, standardizer = checkpoint.load_checkpoint(args.checkpoint)
    rows = []
    for folder in sorted(p for p in Path(args.data_dir).iterdir() if p.is_dir()):
        profile = get_profile(folder.name)
        by_task: dict[str, list] = {}
        sketches: dict[str, list[Sketch]] = {}
        for record in open_database(folder).get_all_tuning_records():
            name = HELDOUT.get(int(tvm_ffi.structural_hash(record.workload.mod)))
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
        rows += [{"task": name, "profile": folder.name} | task_row(records, mixes) for name, records in by_task.items()]
    summary = summarise(rows, mixes)
    result = provenance(command_line())
    result |= {"checkpoint": args.checkpoint, "fast_share": FAST, "summary": summary, "tasks": rows}
    Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"uniform prior: {summary['prior_nats_per_token']:.3f} nats/token, fastest quarter "
          f"{summary['fast_prior_nats_per_token']:.3f}")  # fmt: skip
    for key, m in summary["mix"].items():
        print(f"prior_mix {key}: model {m['model_nats_per_token']:.3f}, fastest quarter "
              f"{m['fast_model_nats_per_token']:.3f}, likelihood-speed Spearman {m['mean_likelihood_speed_spearman']:+.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
