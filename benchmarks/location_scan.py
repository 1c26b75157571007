"""Does the compute-location scan agree with TVM's probe, and a module trace with the exact replay?

    python benchmarks/location_scan.py [--profiles amd-zen3-avx2-2c,intel-xeon-native-2c] [--samples 40]
        [--stride 8] [--out benchmarks/results/location_scan.json]

``Sketch.legal_locations`` trusts ``scan_rule`` (TVM's CollectComputeLocation rule read off
the loops, without its trial compute-at per loop) for a location structure once it agreed with
TVM's probe ``SCAN_CHECKS`` times. This checks the two against each other on every location slot
of ``--samples`` prior decision sets of the held-out tasks and every ``--stride``-th training task,
per profile (the design spaces differ by ISA; CUDA ones sample no compute location), and times both.
It also replays each sample both ways ``Sketch.apply`` can (exactly, and from a module trace: each
location sample replaced by fetching the chosen loop) and counts modules that differ, timing both.
And it checks ``NestShape`` (which lets ``legal_locations`` skip the replay): per sketch and location
structure, one fed with every replay here predicts each set, once trusted, before it learns from it;
``shape_predicted`` sets were predicted, ``shape_wrong`` of them differ from TVM's probe.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import tvm
import tvm_ffi
from common import RESULTS, command_line, provenance

from tvm_tensorgpt.data.split import HELDOUT_HOST, HELDOUT_TASKS
from tvm_tensorgpt.generators import PriorGenerator
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import design_sketches
from tvm_tensorgpt.language.locations import NestShape, scan_rule
from tvm_tensorgpt.language.sketch import LOCATION, Sketch, _legal_locations, _nest_loops
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics
from tvm_tensorgpt.workloads.tasks import get_task, load_tasks


def compare(sketch: Sketch, decided: list, slot: int, shape: NestShape) -> tuple[bool, float, float, str, bool | None]:
    """Scan and probe of one location slot on the replayed prefix, and the prediction of the
    structure's ``shape`` (which then learns from the replay): (agree, scan s, probe s, block,
    whether the prediction was right; None: none made)."""
    predicted = shape.predict(decided)
    sch = sketch.replay_to(slot, decided)
    block = sch.get_sblock(sketch.location_blocks[slot])
    inline = -2 in sketch.slots[slot].choices
    start = time.perf_counter()
    kinds, extents = _nest_loops(sch, [sch.get_loops(c) for c in sch.get_consumers(block)])
    scanned = scan_rule(kinds, [e == 1 for e in extents], inline)
    middle = time.perf_counter()
    probed = _legal_locations(sch, block, inline)
    probe_s = time.perf_counter() - middle
    shape.learn(decided, kinds, extents, inline, probed)
    right = None if predicted is None else predicted == probed
    return scanned == probed, middle - start, probe_s, sketch.location_blocks[slot], right


def replay_both(sketch: Sketch, decisions: list, seed: int) -> tuple[bool, float, float]:
    """(same module, exact s, module-trace s) of one decision set."""
    start = time.perf_counter()
    exact = sketch.apply(decisions, seed=seed)
    middle = time.perf_counter()
    module = sketch.apply(decisions, seed=seed, exact=False)
    return bool(tvm_ffi.structural_equal(exact.mod, module.mod)), middle - start, time.perf_counter() - middle


def check_profile(profile: str, tasks: list[str], samples: int) -> dict:
    target = tvm.target.Target(get_profile(profile).target)
    load_tensor_intrinsics(target)
    out: dict = {"tasks": {}, "sets": 0, "disagree": 0, "scan_s": 0.0, "probe_s": 0.0, "shape_predicted": 0,
                 "shape_wrong": 0, "replays": 0, "module_differs": 0, "exact_s": 0.0, "module_s": 0.0}  # fmt: skip
    rng = np.random.default_rng(1)
    for name in tasks:
        sketches = design_sketches(get_task(name).mod, target)
        sets = disagree = differs = predicted = wrong = 0
        shapes: dict[tuple, NestShape] = {}
        for index, proposal in enumerate(PriorGenerator(tvm_locations=False).generate(sketches, samples, rng)):
            sketch = sketches[proposal.sketch_index]
            same, exact_s, module_s = replay_both(sketch, proposal.decisions, seed=index + 1)
            differs += not same
            out["exact_s"] += exact_s
            out["module_s"] += module_s
            for slot, kind in enumerate(s.kind for s in sketch.slots):
                if kind != LOCATION:
                    continue
                decided = proposal.decisions[:slot]
                shape = shapes.setdefault((proposal.sketch_index, *sketch._placed(slot, decided)), NestShape())
                agree, scan_s, probe_s, block, right = compare(sketch, decided, slot, shape)
                sets += 1
                disagree += not agree
                predicted += right is not None
                wrong += right is False
                out["scan_s"] += scan_s
                out["probe_s"] += probe_s
                if not agree:
                    print(f"  {name}: scan and probe disagree on block {block}", flush=True)
        out["tasks"][name] = {"sets": sets, "disagree": disagree, "shape_predicted": predicted, "shape_wrong": wrong,
                              "module_differs": differs}  # fmt: skip
        print(f"{profile} {name}: {sets} location sets, {disagree} disagree, {predicted} predicted ({wrong} wrong); "
              f"{differs} module traces differ", flush=True)  # fmt: skip
        out["sets"] += sets
        out["disagree"] += disagree
        out["shape_predicted"] += predicted
        out["shape_wrong"] += wrong
        out["replays"] += samples
        out["module_differs"] += differs
    for key in ("scan_s", "probe_s", "exact_s", "module_s"):
        out[key] = round(out[key], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default=f"{HELDOUT_HOST},intel-xeon-native-2c")
    parser.add_argument("--samples", type=int, default=40, help="prior decision sets per task")
    parser.add_argument("--stride", type=int, default=8, help="every n-th training task besides the held-out ones")
    parser.add_argument("--out", default=str(RESULTS / "location_scan.json"))
    args = parser.parse_args()
    held_out = set(HELDOUT_TASKS)
    tasks = list(HELDOUT_TASKS) + [t.name for t in load_tasks() if t.name not in held_out][:: args.stride]
    result = provenance(command_line()) | {"samples": args.samples, "tasks": len(tasks), "profiles": {}}
    for profile in args.profiles.split(","):
        result["profiles"][profile] = check_profile(profile, tasks, args.samples)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for profile, res in result["profiles"].items():
        print(f"{profile}: {res['sets']} location sets in {len(res['tasks'])} tasks, {res['disagree']} disagree, "
              f"{res['shape_predicted']} predicted by NestShape ({res['shape_wrong']} wrong); "
              f"scan {res['scan_s']} s, probe {res['probe_s']} s; {res['replays']} decision sets replayed, "
              f"{res['module_differs']} module traces differ; exact {res['exact_s']} s, module trace {res['module_s']} s")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
