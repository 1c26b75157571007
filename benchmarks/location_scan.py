"""Does the compute-location scan agree with TVM's probe? Every location set of prior samples.

    python benchmarks/location_scan.py [--profiles amd-zen3-avx2-2c,intel-xeon-native-2c] [--samples 40]
        [--stride 8] [--out benchmarks/results/location_scan.json]

``Sketch.legal_locations`` trusts ``_scan_locations`` (TVM's CollectComputeLocation rule read off
the loops, without its trial compute-at per loop) for a location structure once it agreed with
TVM's probe ``SCAN_CHECKS`` times. This checks the two against each other on every location slot
of ``--samples`` prior decision sets of the held-out tasks and every ``--stride``-th training task,
per profile (the design spaces differ by ISA; CUDA ones sample no compute location), and times both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import tvm
from common import RESULTS, command_line, provenance

from tvm_tensorgpt.data.split import HELDOUT_HOST, HELDOUT_TASKS
from tvm_tensorgpt.generators import PriorGenerator
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import design_sketches
from tvm_tensorgpt.language.sketch import LOCATION, Sketch, _legal_locations, _scan_locations
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics
from tvm_tensorgpt.workloads.tasks import get_task, load_tasks


def compare(sketch: Sketch, decided: list, slot: int) -> tuple[bool, float, float, str]:
    """Scan and probe of one location slot on the replayed prefix: (agree, scan s, probe s, block)."""
    sch = sketch.replay_to(slot, decided)
    block = sch.get_sblock(sketch.location_blocks[slot])
    inline = -2 in sketch.slots[slot].choices
    start = time.perf_counter()
    scanned = _scan_locations(sch, [sch.get_loops(c) for c in sch.get_consumers(block)], inline)
    middle = time.perf_counter()
    probed = _legal_locations(sch, block, inline)
    return scanned == probed, middle - start, time.perf_counter() - middle, sketch.location_blocks[slot]


def check_profile(profile: str, tasks: list[str], samples: int) -> dict:
    target = tvm.target.Target(get_profile(profile).target)
    load_tensor_intrinsics(target)
    out: dict = {"tasks": {}, "sets": 0, "disagree": 0, "scan_s": 0.0, "probe_s": 0.0}
    rng = np.random.default_rng(1)
    for name in tasks:
        sketches = design_sketches(get_task(name).mod, target)
        sets = disagree = 0
        for proposal in PriorGenerator(tvm_locations=False).generate(sketches, samples, rng):
            sketch = sketches[proposal.sketch_index]
            for slot, kind in enumerate(s.kind for s in sketch.slots):
                if kind != LOCATION:
                    continue
                agree, scan_s, probe_s, block = compare(sketch, proposal.decisions[:slot], slot)
                sets += 1
                disagree += not agree
                out["scan_s"] += scan_s
                out["probe_s"] += probe_s
                if not agree:
                    print(f"  {name}: scan and probe disagree on block {block}", flush=True)
        if sets:
            out["tasks"][name] = {"sets": sets, "disagree": disagree}
            print(f"{profile} {name}: {sets} location sets, {disagree} disagree", flush=True)
        out["sets"] += sets
        out["disagree"] += disagree
    out["scan_s"], out["probe_s"] = round(out["scan_s"], 3), round(out["probe_s"], 3)
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
        print(f"{profile}: {res['sets']} location sets in {len(res['tasks'])} tasks, {res['disagree']} disagree; "
              f"scan {res['scan_s']} s, probe {res['probe_s']} s")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
