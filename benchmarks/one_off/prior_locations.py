"""Should the prior decode compute locations itself now that legal sets rarely need a replay?

``PriorGenerator(tvm_locations=True)`` (the search's prior share) leaves each compute location to
TVM's sampler, which draws uniformly from the same live legal set, so its candidates must be
replayed exactly: TVM's trial compute-at per candidate loop. With ``tvm_locations=False`` it draws
from ``Sketch.legal_locations`` (a replay per row until the location structure is learned,
``NestShape``) and the candidate is made from a module trace. Same distribution; this times both
over the prior's calls of a carry-0.75 tune (128, 25, 17, 8 rows), decoding plus realising
(replay and postprocessors, 2 threads, as the strategy's pool does), alternating ``--reps`` times
on freshly analysed sketches.

    python benchmarks/one_off/prior_locations.py [TASK ...] [--reps 3] [--profile P] [--out FILE.json]
"""

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from tvm.s_tir import meta_schedule as ms

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import command_line, provenance  # noqa: E402

from decode_ahead import ROUNDS, arguments  # noqa: E402
from tvm_tensorgpt.generators import PriorGenerator  # noqa: E402
from tvm_tensorgpt.language import design_sketches  # noqa: E402
from tvm_tensorgpt.tvm_glue import resolved_postprocs  # noqa: E402
from tvm_tensorgpt.workloads.tasks import get_task  # noqa: E402


def one_tune(mod, target, postprocs: list, tvm_locations: bool, rng: np.random.Generator) -> dict:
    sketches = design_sketches(mod, target)
    prior = PriorGenerator(tvm_locations=tvm_locations)
    prior.prepare(target)
    decode = realise = 0.0
    exact = 0
    with ThreadPoolExecutor(2) as threads:
        for want in ROUNDS:
            started = time.perf_counter()
            proposals = prior.generate(sketches, want, rng)
            middle = time.perf_counter()
            done = list(threads.map(lambda p: sketches[p.sketch_index].realise(p.decisions, postprocs, exact=False),
                                    proposals))  # fmt: skip
            decode += middle - started
            realise += time.perf_counter() - middle
            exact += sum(r.exact for r in done)
    return {"decode_s": round(decode, 3), "realise_s": round(realise, 3), "exact_replays": exact}


def main() -> None:
    args, target = arguments(__doc__)
    out: dict = provenance(command_line()) | {"profile": args.profile, "rounds": list(ROUNDS), "tasks": {}}
    for task in args.tasks:
        mod = get_task(task).mod
        context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply",
                                 search_strategy="evolutionary", num_threads=2)  # fmt: skip
        postprocs = resolved_postprocs(context)
        result: dict = {"tvm": [], "decoded": []}
        for rep in range(args.reps):
            for variant, tvm_locations in (("tvm", True), ("decoded", False)):
                result[variant].append(one_tune(mod, target, postprocs, tvm_locations, np.random.default_rng(rep)))
        out["tasks"][task] = result
        print(task, json.dumps(result), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
