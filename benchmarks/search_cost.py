"""The search's own seconds over a tune of each task, with nothing built or run: an A/B tool for
search speed-ups on a machine whose speed drifts.

A whole tune's search share (``search_time.py``) moves with the machine: between two runs an hour
apart here, measurement took 25 % longer and the search seconds did not tell a speed-up from the
drift. This runs only the search: the strategy's rounds of a ``--trials`` tune (``pre_tuning``,
``generate_measure_candidates``, ``notify_runner_results``, the cost model's ``update``) with
made-up latencies, a fixed function of each candidate's structural hash, so two versions of the
code see the same numbers for the same schedules. Run it from two checkouts in alternation
(``PYTHONPATH=<checkout>``: the script uses only the public strategy and cost-model API) and
compare each task's seconds within a repetition.

    python benchmarks/search_cost.py [--tasks N|a,b] [--trials 64] [--per-round 16] [--seed 1]
        [--profile P] [--label NAME] [--out FILE.jsonl]

Each call appends one JSON line (label, the package's commit, per-task seconds and pool slots) to
``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import tvm_ffi
from common import command_line, provenance
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.runner import RunnerResult

import tvm_tensorgpt
from tvm_tensorgpt.costmodel import TensorGPTCostModel
from tvm_tensorgpt.data.split import HELDOUT_TASKS
from tvm_tensorgpt.hardware import get_profile, this_machine
from tvm_tensorgpt.plugin.strategy import SearchConfig, TensorGPTSearchStrategy, TuningStats
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics, parse_target
from tvm_tensorgpt.workloads.tasks import get_task


def package_commit() -> str:
    """The commit of the checkout the package was imported from (``PYTHONPATH`` picks it)."""
    where = Path(tvm_tensorgpt.__file__).parent
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=where)
    return done.stdout.strip()


def made_up_latency(candidate) -> float:
    """Seconds, 1-2 ms, fixed by the scheduled module (the same in every version of the code)."""
    return 1e-3 * (1 + int(tvm_ffi.structural_hash(candidate.sch.mod)) % 997 / 997)


def search_seconds(name: str, target, trials: int, per_round: int, seed: int) -> dict:
    """One task's search: (strategy seconds, cost-model update seconds, pool slots made anew)."""
    stats = TuningStats()
    strategy = TensorGPTSearchStrategy("default", SearchConfig(), stats)
    cost_model = TensorGPTCostModel()
    context = ms.TuneContext(mod=get_task(name).mod, target=target, space_generator="tensorgpt",
                             search_strategy=strategy, num_threads=2, rand_state=seed, task_name=name)  # fmt: skip
    strategy.pre_tuning(trials, per_round, context.generate_design_space(), None, cost_model)
    search = update = 0.0
    while True:
        started = time.perf_counter()
        batch = strategy.generate_measure_candidates()
        search += time.perf_counter() - started
        if batch is None:
            break
        results = [RunnerResult([made_up_latency(c)], None) for c in batch]
        started = time.perf_counter()
        strategy.notify_runner_results(batch, results)
        cost_model.update(context, batch, results)
        update += time.perf_counter() - started
    strategy.post_tuning()
    return {"search_s": round(search, 3), "update_s": round(update, 3), "slots": stats.task(name).slots}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=None, help="comma-separated task names, or N for the first N held-out ones")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", default=None, help="default: this machine's AVX2 2-core profile")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.tasks is None:
        tasks = list(HELDOUT_TASKS)
    elif args.tasks.isdigit():
        tasks = list(HELDOUT_TASKS)[: int(args.tasks)]
    else:
        tasks = args.tasks.split(",")
    profile = get_profile(args.profile or f"{this_machine().key}-avx2-2c")
    target = parse_target(profile.target)
    load_tensor_intrinsics(target)
    line = provenance(command_line()) | {"label": args.label, "package_commit": package_commit(),
                                         "profile": profile.name, "seed": args.seed, "trials": args.trials,
                                         "tasks": {}}  # fmt: skip
    for name in tasks:
        line["tasks"][name] = search_seconds(name, target, args.trials, args.per_round, args.seed)
        print(args.label, name, line["tasks"][name], flush=True)
    line["search_s"] = round(sum(t["search_s"] + t["update_s"] for t in line["tasks"].values()), 3)
    with Path(args.out).open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    print(f"{args.label}: search + update {line['search_s']} s over {len(tasks)} tasks; appended to {args.out}")


if __name__ == "__main__":
    main()
