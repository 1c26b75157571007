"""The search's share of tuning time, per task, side by side for several runs of the harness.

    python benchmarks/search_time.py RUN[:METHOD] [RUN[:METHOD] ...] [--method tensorgpt] [--seeds 1,2]
        [--out FILE.json]

For one method (a row of ``run.py``; ``--method``, or the one named after a run's folder) in each
run folder: per task (its seeds summed, or those of ``--seeds``), the seconds
spent searching (``generation``: proposing, realising and refining candidates; ``cost_model``:
ranking them and learning from the measurements, as ``run.py`` splits MetaSchedule's Profiler) and
their share of the cells' wall time, and per pool slot the rounds asked for; over the tasks, the sums and the share of the summed wall
(issue #15's goal: <= 10 %). Prints a markdown table; ``--out`` also writes the numbers as JSON.
Runs on the same machine and tasks (e.g. before and after a speed-up) compare directly; wall time
drifts between sessions even on one machine, so compare shares, not seconds, across days.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from common import command_line, provenance, read_cells


def split(run: Path, method: str, seeds: set[int] | None = None) -> dict:
    """Per task (summed over its seeds, or ``seeds``) and over all tasks: search seconds,
    cost-model seconds, wall, share."""
    tasks: dict[str, dict] = {}
    for cell in read_cells(run / "results.jsonl").values():
        if cell["method"] != method or (seeds is not None and cell["seed"] not in seeds):
            continue
        task = tasks.setdefault(cell["task"], {"generation": 0.0, "cost_model": 0.0, "wall": 0.0, "cells": 0,
                                               "slots": 0})  # fmt: skip
        for key in ("generation", "cost_model", "wall"):
            task[key] = round(task[key] + cell["time_s"][key], 3)
        task["cells"] += 1
        task["slots"] += cell["extra"].get("slots", 0)  # pool slots the rounds asked for (cells since 2026-12-07)
    total = {k: round(sum(t[k] for t in tasks.values()), 1) for k in ("generation", "cost_model", "wall", "cells", "slots")}
    for t in [*tasks.values(), total]:
        search = t["generation"] + t["cost_model"]
        t["share"] = round(search / t["wall"], 3) if t["wall"] else None
        t["ms_per_slot"] = round(1000 * search / t["slots"], 2) if t["slots"] else None
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    return {"commit": meta.get("commit"), "machine": meta.get("machine"), "profile": meta.get("profile"),
            "tasks": tasks, "total": total}  # fmt: skip


def table(runs: dict[str, dict]) -> str:
    names = list(runs)
    tasks = sorted({task for r in runs.values() for task in r["tasks"]})
    head = " | ".join(f"{n}: search s / wall s / share / ms a pool slot" for n in names)
    lines = [f"| task | {head} |", "|---|" + "---|" * len(names)]

    def cell(t: dict | None) -> str:
        if t is None:
            return "n/a"
        slot = "n/a" if t["ms_per_slot"] is None else f"{t['ms_per_slot']:.1f}"
        return f"{t['generation'] + t['cost_model']:.1f} / {t['wall']:.1f} / {100 * t['share']:.1f} % / {slot}"

    for task in tasks:
        lines.append(f"| {task} | " + " | ".join(cell(runs[n]["tasks"].get(task)) for n in names) + " |")
    lines.append("| **all tasks** | " + " | ".join(cell(runs[n]["total"]) for n in names) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders of benchmarks/run.py, each optionally :METHOD")
    parser.add_argument("--method", default="tensorgpt", help="the row to read where a run names none")
    parser.add_argument("--seeds", help="only these seeds (comma-separated); default all")
    parser.add_argument("--out", help="also write the numbers here (JSON)")
    args = parser.parse_args()
    seeds = {int(s) for s in args.seeds.split(",")} if args.seeds else None
    runs = {}
    for spec in args.runs:
        folder, _, method = spec.partition(":")
        name = Path(folder).name + (f" {method}" if method else "")
        runs[name] = split(Path(folder), method or args.method, seeds) | {"method": method or args.method}
    print(table(runs))
    if args.out:
        result = provenance(command_line()) | {"seeds": sorted(seeds) if seeds else "all", "runs": runs}
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
