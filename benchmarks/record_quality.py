"""How close to each task's best the records of one collection run are, against the records before it.

    python benchmarks/record_quality.py --profile intel-xeon-avx2-1c [--run -1] [--data-dir data/records]
        [--out benchmarks/results/record_quality.jsonl]

A profile's database is appended in measurement order and ``provenance.json`` keeps each run's
record count before and after (of the tasks it was given), so a run's records are a known slice
of the file, counted from its end. Over the tasks
that have records both before the run and from it: the share of records within 1.2x of the task's
best (over both), the median record's latency relative to that best, and in how many tasks the run
found the best. The data issue asks for records near each task's best (what the generator's
weighted SFT learns from); this compares a self-training run (``collect --strategy tensorgpt``)
with evolutionary collection continuing the same kind of tasks. Reads JSON only (seconds).
Appends one line per call to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, command_line, provenance

from tvm_tensorgpt.data.collect import read_lines
from tvm_tensorgpt.tvm_glue import DB_FILES

NEAR = 1.2  # "near the best": within 20 % of the task's fastest record


def latencies(lines: list[str]) -> list[tuple[int, float]]:
    """(workload index, mean latency s) of each measured record, in file order."""
    out = []
    for line in lines:
        workload, body = json.loads(line)
        run_secs = body[1] if len(body) > 1 else None
        if run_secs:
            latency = float(np.mean([float(s) for s in run_secs]))
            if latency < 1e9:  # MetaSchedule's marker for a failed run
                out.append((workload, latency))
    return out


def compare(before: list[tuple[int, float]], during: list[tuple[int, float]]) -> dict:
    """Per task with records on both sides, then averaged: share near the best, median / best."""
    sides: dict[int, tuple[list[float], list[float]]] = {}
    for side, rows in enumerate((before, during)):
        for workload, latency in rows:
            sides.setdefault(workload, ([], []))[side].append(latency)
    both = {w: s for w, s in sides.items() if s[0] and s[1]}
    if not both:
        raise SystemExit("no task has records both before the run and from it")
    near, median, found = ([], []), ([], []), 0
    for old, new in both.values():
        best = min(old + new)
        for side, values in enumerate((old, new)):
            near[side].append(float(np.mean([v <= NEAR * best for v in values])))
            median[side].append(float(np.median(values) / best))
        found += min(new) < min(old)
    return {"tasks": len(both), "records": [sum(len(s[0]) for s in both.values()), sum(len(s[1]) for s in both.values())],
            "share_near_best": [float(np.mean(n)) for n in near],
            "median_over_best": [float(np.median(m)) for m in median], "run_found_the_best": found}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--run", type=int, default=-1, help="index into provenance.json's runs (default: the last)")
    parser.add_argument("--data-dir", default=str(ROOT / "data" / "records"))
    parser.add_argument("--out", default=str(RESULTS / "record_quality.jsonl"))
    args = parser.parse_args()
    folder = Path(args.data_dir) / args.profile
    counted = json.loads((folder / "provenance.json").read_text())["runs"][args.run :]  # the run, then later ones
    run = counted[0]
    lines = read_lines(folder / DB_FILES[1])
    # a run's counts are of the tasks it was given, not of the file: its slice is found from the end,
    # after the records of the runs that came later
    if any("records_after" not in r for r in counted):
        raise SystemExit(f"{folder}/provenance.json: this run or a later one has no record counts")
    end = len(lines) - sum(r["records_after"] - r["records_before"] for r in counted[1:])
    start = end - (run["records_after"] - run["records_before"])
    if start < 0:
        raise SystemExit(f"{folder} holds {len(lines)} records, fewer than its runs since this one added")
    result = compare(latencies(lines[:start]), latencies(lines[start:end]))
    row = provenance(command_line()) | {"profile": args.profile, "run": run["command"], "started": run["started"],
                                         "strategy": run.get("strategy", "evolutionary"), "slice": [start, end],
                                         "near": NEAR, **result}  # fmt: skip
    with open(args.out, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    print(f"{args.profile}, {row['strategy']} run of {row['started']}: {result['tasks']} tasks, records before/run "
          f"{result['records'][0]}/{result['records'][1]}; within {NEAR}x of the best {result['share_near_best'][0]:.3f}"
          f" -> {result['share_near_best'][1]:.3f}; median / best {result['median_over_best'][0]:.2f} -> "
          f"{result['median_over_best'][1]:.2f}; the run found the best in {result['run_found_the_best']}")  # fmt: skip


if __name__ == "__main__":
    main()
