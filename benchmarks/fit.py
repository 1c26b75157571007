"""How well a checkpoint fits held-out records, against the uniform prior it must beat.

    python benchmarks/fit.py [--checkpoint tvm_tensorgpt/model/default] [--data-dir data/reference]
        [--out benchmarks/results/fit.json]

For every record of the held-out tasks in ``--data-dir`` (one folder per profile): its decisions
are read from its trace on the design space it came from, then walked token by token under the
language's masks. At each step with more than one legal token, the model's probability of the
record's token (its softmax renormalised over the legal tokens, as masked decoding samples) and
the prior's (1 / number of legal tokens) are scored. Reported per task and overall:

- **fit**: nats per scored decision token, model vs prior (lower is better; a model that learned
  nothing useful about these tasks is at or above the prior);
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

HELDOUT = {int(tvm_ffi.structural_hash(get_task(name).mod)): name for name in HELDOUT_TASKS}


def score(net, standardizer, profile, sketch: Sketch, decisions) -> tuple[float, float, int]:
    """(model log-likelihood, prior log-likelihood, scored tokens) of one record's decisions."""
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
    model_ll = prior_ll = 0.0
    scored = 0
    for position, token in enumerate(response):
        legal = state.legal_tokens()
        if len(legal) > 1:
            row = logits[0, len(prompt) + position - 1, [VOCAB.id(t) for t in legal]]
            model_ll += float(torch.log_softmax(row, dim=0)[legal.index(token)])
            prior_ll -= math.log(len(legal))
            scored += 1
        state.step(token)
    return model_ll, prior_ll, scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(checkpoint.DEFAULT_CHECKPOINT))
    parser.add_argument("--data-dir", default=str(ROOT / "data" / "reference"))
    parser.add_argument("--out", default=str(RESULTS / "fit.json"))
    args = parser.parse_args()
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
                    decisions = sketch.read_decisions(record.trace)
                    model_ll, prior_ll, scored = score(net, standardizer, profile, sketch, decisions)
                except (ValueError, *TVM_ERRORS):
                    continue  # the record came from another design space
                by_task.setdefault(name, []).append((model_ll, prior_ll, scored, mean_latency(record.run_secs)))
                break
        for name, scored_records in by_task.items():
            model_ll, prior_ll, tokens, latency = (np.asarray(x, dtype=float) for x in zip(*scored_records))
            finite = np.isfinite(latency)
            rows.append({"task": name, "profile": folder.name, "records": len(scored_records),
                         "tokens": int(tokens.sum()), "model_nats_per_token": float(-model_ll.sum() / tokens.sum()),
                         "prior_nats_per_token": float(-prior_ll.sum() / tokens.sum()),
                         "likelihood_speed_spearman": spearman(model_ll[finite], 1 / latency[finite])})  # fmt: skip
    tokens = sum(r["tokens"] for r in rows)
    summary = {
        "model_nats_per_token": sum(r["model_nats_per_token"] * r["tokens"] for r in rows) / tokens,
        "prior_nats_per_token": sum(r["prior_nats_per_token"] * r["tokens"] for r in rows) / tokens,
        "mean_likelihood_speed_spearman": float(np.nanmean([r["likelihood_speed_spearman"] for r in rows])),
    }
    result = provenance(command_line())
    result |= {"checkpoint": args.checkpoint, "summary": summary, "tasks": rows}
    Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    for r in rows:
        print(f"{r['task'][:60]:60s} {r['records']:4d} model {r['model_nats_per_token']:.3f} prior "
              f"{r['prior_nats_per_token']:.3f} rank {r['likelihood_speed_spearman']:+.2f}")  # fmt: skip
    print(json.dumps(summary))



if __name__ == "__main__":
    main()
