"""Collection rate: measured trials per second of ``tensorgpt collect`` and where a trial's time goes.

    python benchmarks/collection.py [--label after] [--tasks 6] [--trials 32] [--chunk 16] [--population 256]

Collects ``--trials`` records for each of ``--tasks`` training tasks (spread over the task list)
into a fresh temporary folder, on this machine's ``<machine>-sse42-2c`` profile (or ``--profile``),
with the same ``collect`` the data issue runs. The builder and runner ``collect`` uses are wrapped
in timers, so the run's wall time splits into build (compiling candidates in worker processes,
worker start-ups included), run (measuring them) and the rest (design spaces, evolutionary search,
the database; MetaSchedule's own profiler scopes name the parts of the search). One fresh worker's start-up (``import tvm`` in a new process) is timed on its own.
Appends one JSON object to ``--out`` (default ``benchmarks/results/collection_rate.jsonl``).
Run it on a quiet machine: the numbers are wall-clock. To compare two versions of ``collect``, run
the same command in a checkout of each, one after the other.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import RESULTS, command_line, provenance


class Timer:
    """Seconds spent inside the wrapped builder / runner calls."""

    def __init__(self) -> None:
        self.build_s = self.run_s = 0.0
        self.batches = 0


def timed(timer: Timer):
    """Wrap ``collect``'s builder and runner factories so their calls add to ``timer``."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import PyBuilder
    from tvm.s_tir.meta_schedule.runner import PyRunner

    @derived_object
    class TimedBuilder(PyBuilder):
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def build(self, build_inputs):
            start = time.perf_counter()
            out = self.inner.build(build_inputs)
            timer.build_s += time.perf_counter() - start
            timer.batches += 1
            return out

    @derived_object
    class TimedRunner(PyRunner):
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def run(self, runner_inputs):
            start = time.perf_counter()
            futures = self.inner.run(runner_inputs)  # the local runner measures inside run()
            timer.run_s += time.perf_counter() - start
            return futures

    return TimedBuilder, TimedRunner


def worker_startup_s() -> float:
    """Seconds until a fresh popen worker (what every builder pool starts) has imported TVM."""
    from tvm.support.popen_pool import PopenPoolExecutor

    start = time.perf_counter()
    pool = PopenPoolExecutor(max_workers=1, timeout=120)
    pool.submit(int, 0).result()
    elapsed = time.perf_counter() - start
    pool.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="", help="what this run measures (e.g. before / after)")
    parser.add_argument("--profile", help="a CPU profile of this machine (default <machine>-sse42-2c)")
    parser.add_argument("--tasks", type=int, default=6, help="training tasks, spread over the list")
    parser.add_argument("--trials", type=int, default=32, help="records per task")
    parser.add_argument("--chunk", type=int, default=16, help="trials per task per pass")
    parser.add_argument("--population", type=int, default=256, help="evolutionary search population")
    parser.add_argument("--out", default=str(RESULTS / "collection_rate.jsonl"))
    args = parser.parse_args()

    from tvm.s_tir import meta_schedule as ms

    import tvm_tensorgpt.data.collect as collect_module
    from tvm_tensorgpt.data.collect import CollectConfig, collect
    from tvm_tensorgpt.data.split import training_tasks
    from tvm_tensorgpt.hardware import get_profile, this_machine

    profile = get_profile(args.profile or f"{this_machine().key}-sse42-2c")
    every = training_tasks()
    tasks = every[:: max(1, len(every) // args.tasks)][: args.tasks]
    timer = Timer()
    builder_cls, runner_cls = timed(timer)
    make_builder, make_runner = collect_module.local_builder, collect_module.local_runner
    collect_module.local_builder = lambda *a, **k: builder_cls(make_builder(*a, **k))
    collect_module.local_runner = lambda *a, **k: runner_cls(make_runner(*a, **k))
    startup = worker_startup_s()
    with tempfile.TemporaryDirectory() as folder, ms.Profiler() as profiler:
        start = time.perf_counter()
        config = CollectConfig(trials=args.trials, chunk=args.chunk, population=args.population)
        counts = collect(profile, tasks, folder, config, command=command_line())
        wall = time.perf_counter() - start
    scopes = sorted(((name, float(sec.value)) for name, sec in profiler.get().items()), key=lambda kv: -kv[1])
    trials = sum(counts.values())
    row = provenance(command_line()) | {
        "label": args.label, "profile": profile.name, "tasks": [t.name for t in tasks],
        "trials_per_task": args.trials, "chunk": args.chunk, "trials": trials, "wall_s": round(wall, 1),
        "trials_per_s": round(trials / wall, 3), "build_s": round(timer.build_s, 1), "run_s": round(timer.run_s, 1),
        "other_s": round(wall - timer.build_s - timer.run_s, 1), "builder_batches": timer.batches,
        "worker_startup_s": round(startup, 2), "population": args.population,
        "metaschedule_scopes_s": {name: round(sec, 1) for name, sec in scopes if sec >= 0.5},
    }  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
