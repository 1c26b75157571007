"""A/B of two search speed-ups in one process, on one held-out task (default: the resnet50 3x3
convolution), alternating the variants ``--reps`` times:

- decoding ahead: the bundled ModelGenerator with ``ahead=0`` and ``ahead=64`` over the calls a
  carry-0.75 tune makes (its model share of each round: 128, 25, 17, 8 rows, spread over the sketches);
- refinement children: ``_refine`` of 96 tile/unroll/location/parallel mutations of one measured
  round, replayed exactly or from module traces (``Sketch.module_trace``).

    python benchmarks/one_off/search_speedups.py [TASK] [--reps 3] [--out FILE.json]
"""

import argparse
import json
import time

import numpy as np
import tvm
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.runner import RunnerResult

from tvm_tensorgpt.data.split import HELDOUT_TASKS
from tvm_tensorgpt.generators import PriorGenerator, resolve_generator
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import Sketch, design_sketches
from tvm_tensorgpt.plugin.strategy import TaskStats, TensorGPTSearchStrategy
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics
from tvm_tensorgpt.workloads.tasks import get_task

from decode_ahead import ask_as_a_tune  # the same calls a tune makes

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task", nargs="?", default=HELDOUT_TASKS[0])
    parser.add_argument("--profile", default="amd-zen5-avx2-2c")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    target = tvm.target.Target(get_profile(args.profile).target)
    load_tensor_intrinsics(target)
    mod = get_task(args.task).mod
    sketches = design_sketches(mod, target)
    generator = resolve_generator("default")
    generator.prepare(target)
    generator.generate(sketches[:1], 8, np.random.default_rng(0))  # warm-up
    out: dict = {"task": args.task, "profile": args.profile, "generate_s": {"0": [], "64": []},
                 "refine_s": {"exact": [], "module": []}, "refine_children": {"exact": [], "module": []}}
    generator.ahead_factor = float("inf")  # as before the factor (benchmarks/one_off/decode_ahead.py)
    for rep in range(args.reps):
        for ahead in (0, 64):
            generator.ahead = ahead
            generator._ahead.clear()
            out["generate_s"][str(ahead)].append(ask_as_a_tune(generator, sketches, np.random.default_rng(rep)))
    strategy = TensorGPTSearchStrategy(PriorGenerator(tvm_locations=False))
    context = ms.TuneContext(mod=mod, target=target, space_generator="tensorgpt", search_strategy=strategy,
                             num_threads=2, rand_state=3)  # fmt: skip
    strategy.pre_tuning(64, 16, context.generate_design_space(), None, None)
    batch = strategy.generate_measure_candidates()
    strategy.notify_runner_results(batch, [RunnerResult([1e-3 * (i + 1)], None) for i in range(len(batch))])
    module_trace = Sketch.module_trace
    for _ in range(args.reps):
        for mode in ("exact", "module"):
            Sketch.module_trace = module_trace if mode == "module" else (lambda self, trace, decisions: None)
            strategy.state.decided.clear()
            pool: list = []
            started = time.perf_counter()
            strategy._refine(strategy.state, TaskStats(), 96, pool, set())
            out["refine_s"][mode].append(round(time.perf_counter() - started, 3))
            out["refine_children"][mode].append(len(pool))
    Sketch.module_trace = module_trace
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
