"""Pick the "seen" benchmark tasks: training tasks the self-trained checkpoint learnt from on this profile.

    python benchmarks/one_off/seen_tasks.py [--profile amd-zen5-native-2c] [--count 14] [--seed 0]

The held-out benchmark asks whether the generator helps on tasks it never saw; this list asks the
easier question first: does it help the loop where it *has* seen the task, on the machine and ISA
its records came from (the best case)? Eligible: training tasks outside the first 40 of the
trainer's whole-task validation draw (``trainer._split``, seed 0: 17 held there; 40 leaves room
for experts' own draws), with >= 32 records of ``--profile``, not layout-only (reshape, concatenate,
strided_slice, transpose: one or few schedules). Prints the comma list for ``run.py --suite training
--tasks``.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from pathlib import Path

LAYOUT_ONLY = ("reshape", "concatenate", "strided_slice", "transpose", "broadcast_to")


def main() -> None:
    import tvm_ffi

    from tvm_tensorgpt.data.collect import open_database
    from tvm_tensorgpt.data.split import training_tasks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="amd-zen5-native-2c")
    parser.add_argument("--count", type=int, default=14)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tasks = training_tasks()
    validation = sorted((t.name for t in tasks), key=lambda name: random.Random(f"0:{name}").random())[:40]
    records = open_database(Path("data/records") / args.profile).get_all_tuning_records()
    counts = Counter(int(tvm_ffi.structural_hash(r.workload.mod)) for r in records)
    eligible = [t.name for t in tasks
                if t.name not in validation and counts[int(tvm_ffi.structural_hash(t.mod))] >= 32
                and not any(word in t.name.split("/")[1] for word in LAYOUT_ONLY)]  # fmt: skip
    print(",".join(sorted(random.Random(args.seed).sample(sorted(eligible), args.count))))


if __name__ == "__main__":
    main()
