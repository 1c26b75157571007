"""Measure every cell's best schedules again, all in one batch on a quiet machine.

    python benchmarks/remeasure.py --run benchmarks/results/subgraphs [--repeats 3] [--rounds 1] [--again]

A cell's best latency comes from one measurement taken while it tuned; here one task's best spread
4.2x over 8 seeds, and latencies logged under load were off by 0.5-2.4x. So the rows are compared
on values taken together: each cell's ``top`` schedules (run.py keeps its 3 fastest) are rebuilt
from their traces, built with the plugin's builder and measured with the tuning's runner and evaluator
(pinned to the profile's cores), ``--repeats`` times each, task by task so every method's schedules of a task
are measured minutes apart at most. ``--rounds R`` measures a task's schedules R times over, each
round in another order: a schedule's latency is the median of its rounds (each round's value the
median of its repeats), and ``rounds_us`` keeps every round's value, so the spread within one batch
can be read off. A cell's re-measured latency is the fastest of its schedules. Appended per task to ``remeasured.jsonl`` in the run
folder (a killed run resumes); ``report.py`` compares the rows on these values when they exist.
``--again``: a row was added to the run after its batch, so every cell is measured anew in one
batch; the earlier batch is kept beside it as ``remeasured-1.jsonl`` (``-2``, ... after that).
A killed ``--again`` run resumes without ``--again``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
from common import provenance, read_cells

REMEASURED = "remeasured.jsonl"


def read_remeasured(folder: Path) -> dict[tuple[str, str, int], dict]:
    """Re-measured cells by (method, task, seed); a line cut by a kill is measured again."""
    return read_cells(folder / REMEASURED)


def _module(name: str):
    """A cell's workload: a task of the networks, or a named workload (the gemm suite)."""
    from tvm_tensorgpt.workloads import get_workload
    from tvm_tensorgpt.workloads.tasks import get_task

    try:
        return get_task(name).mod
    except KeyError:
        return get_workload(name).build()


def _schedules(mod, traces: list) -> list:
    """The cell's schedules, rebuilt from MetaSchedule's trace JSON (postprocessing included)."""
    from tvm.s_tir import Schedule
    from tvm.s_tir.schedule import Trace

    out = []
    for trace in traces:
        sch = Schedule(mod)
        Trace.apply_json_to_schedule(trace, sch)
        out.append(sch)
    return out


def measure(schedules: list, profile, repeats: int, rounds: int = 1, order_seed: str = "") -> list[list[float]]:
    """Latencies (us) of each schedule, one per round it ran in (empty: it never ran): built once,
    then ``rounds`` rounds of ``repeats`` repeats of the tuning's measurement (TVM's default
    evaluator: 3 runs, at least 100 ms, per repeat; a round's value is their median), each round in
    its own order (first as given, then shuffled with ``order_seed``), so no schedule is always
    measured first or last."""
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.builder import BuilderInput
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, RunnerInput
    from tvm.target import Target

    from tvm_tensorgpt.hardware.runner import local_runner
    from tvm_tensorgpt.tvm_glue import local_builder

    target = Target(profile.target)
    built = local_builder().build([BuilderInput(s.mod, target) for s in schedules])
    ok = [i for i, b in enumerate(built) if b.error_msg is None]
    runner = local_runner(profile, EvaluatorConfig(repeat=repeats))
    taken: list[list[float]] = [[] for _ in schedules]
    for round_index in range(rounds):
        order = list(ok)
        if round_index:
            random.Random(f"{order_seed}:{round_index}").shuffle(order)
        inputs = [RunnerInput(built[i].artifact_path, "cpu",
                              ArgInfo.from_entry_func(schedules[i].mod, remove_preproc=True)) for i in order]  # fmt: skip
        for i, future in zip(order, runner.run(inputs)):
            result = future.result()
            if result.error_msg is None:
                taken[i].append(float(np.median([float(x) for x in result.run_secs])) * 1e6)
    return taken


def set_aside(folder: Path) -> Path | None:
    """Rename the run's re-measured batch to the first free ``remeasured-N.jsonl`` (None: no batch)."""
    current = folder / REMEASURED
    if not current.exists():
        return None
    index = 1
    while (kept := folder / f"remeasured-{index}.jsonl").exists():
        index += 1
    return current.rename(kept)


def remeasure(folder: Path, repeats: int, rounds: int = 1) -> list[dict]:
    from tvm.target import Target

    from tvm_tensorgpt.hardware import check_this_machine, get_profile
    from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics

    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    profile = get_profile(meta["profile"])
    check_this_machine(profile, "re-measure on")
    load_tensor_intrinsics(Target(profile.target))
    cells = [c for c in read_cells(folder / "results.jsonl").values() if c.get("top")]
    done = read_remeasured(folder)
    todo = [c for c in cells if (c["method"], c["task"], c["seed"]) not in done]
    stamp = provenance(" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]))
    tasks = list(dict.fromkeys(c["task"] for c in todo))
    for index, task in enumerate(tasks, start=1):
        mine = [c for c in todo if c["task"] == task]
        mod = _module(task)
        schedules = [_schedules(mod, [t["trace"] for t in c["top"]]) for c in mine]
        latencies = iter(measure([s for group in schedules for s in group], profile, repeats, rounds, task))
        rows = []
        for cell, group in zip(mine, schedules):
            taken = [next(latencies) for _ in group]
            us = [float(np.median(t)) if t else None for t in taken]
            finite = [u for u in us if u is not None]
            rows.append({"method": cell["method"], "task": task, "seed": cell["seed"],
                         "tuned_us": [t["us"] for t in cell["top"]], "remeasured_us": us, "rounds_us": taken,
                         "best_us": min(finite) if finite else None, "repeats": repeats, "rounds": rounds,
                         "date": stamp["date"], "commit": stamp["commit"], "machine": stamp["machine"]})  # fmt: skip
        with open(folder / REMEASURED, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
        print(f"[{index}/{len(tasks)}] {task}: {len(rows)} cells re-measured", file=sys.stderr, flush=True)
    return list(read_remeasured(folder).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a run.py folder (results.jsonl + meta.json)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each schedule (the median counts)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every schedule of a task this many times, each round in another order (the "
                             "median of the rounds counts): a batch's slow drift and one-off outliers average out")
    parser.add_argument("--again", action="store_true",
                        help="measure every cell anew in one batch, keeping the earlier batch as remeasured-N.jsonl")
    args = parser.parse_args()
    if args.repeats < 1 or args.rounds < 1:
        parser.error("--repeats and --rounds must be at least 1")
    if args.again and (kept := set_aside(Path(args.run))):
        print(f"the earlier batch is kept as {kept}", file=sys.stderr)
    rows = remeasure(Path(args.run), args.repeats, args.rounds)
    print(f"{len(rows)} cells re-measured in {Path(args.run) / REMEASURED}")


if __name__ == "__main__":
    main()
