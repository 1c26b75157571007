"""How many rows should the model decode ahead per sketch? An A/B in one process.

``ModelGenerator`` decodes at least ``ahead`` rows per sketch and keeps the ones not asked for: a
decoding step costs about the same for 3 rows as for 64, but rows never asked for are waste, and a
row's legal compute locations can cost a replay each. For each task, over the calls a carry-0.75
tune makes (its model share of each round: 128, 25, 17, 8 rows, spread uniformly over the
sketches), the ``--variants`` alternate ``--reps`` times, each on freshly analysed sketches
(``Sketch`` learns location structures as it decodes), and the rows decoded are counted. A variant
is ``AHEAD`` or ``AHEADxFACTOR`` (``ModelGenerator.ahead_factor``; none: no bound).

    python benchmarks/one_off/decode_ahead.py [TASK ...] [--variants 0,16,64,64x2] [--reps 3] [--profile P]
        [--out FILE.json]
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import tvm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import command_line, provenance  # noqa: E402

from tvm_tensorgpt.data.split import HELDOUT_TASKS  # noqa: E402
from tvm_tensorgpt.generators import resolve_generator  # noqa: E402
from tvm_tensorgpt.hardware import get_profile  # noqa: E402
from tvm_tensorgpt.language import design_sketches  # noqa: E402
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics  # noqa: E402
from tvm_tensorgpt.workloads.tasks import get_task  # noqa: E402

ROUNDS = (128, 25, 17, 8)
TASKS = [HELDOUT_TASKS[0], "bert/fused_softmax_broadcast_to2", "bert/layer_norm", "resnet50/mean"]


def ask_as_a_tune(generator, sketches: list, rng: np.random.Generator) -> float:
    """Seconds ``generator`` takes over the calls of a carry-0.75 tune (``ROUNDS``, one call per sketch)."""
    started = time.perf_counter()
    for want in ROUNDS:
        for index, count in enumerate(rng.multinomial(want, np.full(len(sketches), 1 / len(sketches)))):
            if count:
                generator.generate([sketches[index]], int(count), rng)
    return round(time.perf_counter() - started, 3)


def arguments(doc: str, **extra: str) -> tuple[argparse.Namespace, tvm.target.Target]:
    """The A/B scripts' command line (tasks, profile, repetitions, output; ``extra``: more options
    with their defaults) and the profile's target, its intrinsics loaded."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=TASKS)
    for option, default in extra.items():
        parser.add_argument(f"--{option}", default=default)
    parser.add_argument("--profile", default="amd-zen3-avx2-2c")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    target = tvm.target.Target(get_profile(args.profile).target)
    load_tensor_intrinsics(target)
    return args, target


def main() -> None:
    args, target = arguments(__doc__, variants="0,16,64,64x2")
    generator = resolve_generator("default")
    generator.prepare(target)
    decode = generator._decode
    decoded = [0]

    def counting(sketches, picks, *rest):
        decoded[0] += len(picks)
        return decode(sketches, picks, *rest)

    generator._decode = counting
    variants = args.variants.split(",")
    out: dict = provenance(command_line()) | {"profile": args.profile, "rounds": list(ROUNDS), "tasks": {}}
    for task in args.tasks:
        mod = get_task(task).mod
        result = {v: {"seconds": [], "decoded": 0} for v in variants}
        generator.generate(design_sketches(mod, target)[:1], 8, np.random.default_rng(0))  # warm-up
        for rep in range(args.reps):
            for variant in variants:
                ahead, _, factor = variant.partition("x")
                sketches = design_sketches(mod, target)
                generator.ahead, generator.ahead_factor = int(ahead), float(factor or "inf")
                decoded[0] = 0
                generator._ahead.clear()
                result[variant]["seconds"].append(ask_as_a_tune(generator, sketches, np.random.default_rng(rep)))
                result[variant]["decoded"] = decoded[0]
        out["tasks"][task] = {"sketches": len(sketches), "asked": sum(ROUNDS), "ahead": result}
        print(task, json.dumps(result), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
