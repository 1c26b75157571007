"""Does online adaptation (``AdaptConfig``) help? The bundled checkpoint with and without it.

    python benchmarks/adaptation.py [--tasks N] [--trials 32] [--steps 4] [--profile amd-zen3-avx2-2c]

Same tasks (the first N held-out subgraphs), budget, seed and harness (``run.tune_cell``) for both
arms; results append to ``benchmarks/results/adaptation.jsonl`` (finished cells are skipped) and
the summary (geometric mean of best-latency ratios) goes to ``adaptation.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from common import RESULTS, read_cells, run_meta
from run import tune_cell

from tvm_tensorgpt.data.split import HELDOUT_HOST, heldout_tasks
from tvm_tensorgpt.generators.model import AdaptConfig, ModelGenerator
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.model.checkpoint import DEFAULT_CHECKPOINT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", default=HELDOUT_HOST)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    args.suite, args.quick, args.seeds = "subgraphs", False, [args.seed]  # the harness settings run_meta records
    profile = get_profile(args.profile)
    path = Path(args.out) / "adaptation.jsonl"
    done = read_cells(path)
    for task in heldout_tasks()[: args.tasks]:
        for arm, steps in (("static", 0), (f"adapt-{args.steps}", args.steps)):
            if (arm, task.name, args.seed) in done:
                continue
            generator = ModelGenerator.from_checkpoint(DEFAULT_CHECKPOINT, adapt=AdaptConfig(steps=steps))
            cell = tune_cell(arm, task.name, task.mod, profile, generator, args.trials, args.per_round, args.seed,
                             tempfile.mkdtemp(prefix=f"adapt-{arm}-"))  # fmt: skip
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(cell)) + "\n")
            print(f"{arm:10s} {task.name}: best {cell.best_us:.1f} us, generation {cell.time_s['generation']:.1f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
    rows = list(read_cells(path).values())
    by_task: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_task.setdefault(row["task"], {})[row["method"]] = row
    adapt = f"adapt-{args.steps}"
    pairs = [(r["static"]["best_us"], r[adapt]["best_us"]) for r in by_task.values() if "static" in r and adapt in r]
    speedup = math.exp(sum(math.log(s / a) for s, a in pairs) / len(pairs)) if pairs else None
    summary = {"meta": run_meta(args), "speedup_geomean": speedup, "tasks": len(pairs),
               "generation_s": {arm: sum(r["time_s"]["generation"] for r in rows if r["method"] == arm)
                                for arm in ("static", adapt)},
               "cells": {t: {m: c["best_us"] for m, c in arms.items()} for t, arms in by_task.items()}}  # fmt: skip
    (Path(args.out) / "adaptation.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary["cells"], indent=1))
    print(f"static / adapted best latency, geometric mean over {len(pairs)} tasks: {speedup}")


if __name__ == "__main__":
    main()
