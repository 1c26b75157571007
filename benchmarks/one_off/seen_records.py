"""How many records of each named task every source profile of a records folder holds (what a
checkpoint trained on that folder saw of the task, per machine).

    python benchmarks/one_off/seen_records.py --tasks "$(python benchmarks/one_off/seen_tasks.py)" DIR [DIR ...]

DIR: a records folder (``data/records`` or a ``git archive`` snapshot of it), each profile's database
opened as collection opens it (``open_database``: unpacked from the ``.gz`` files where needed).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def main() -> None:
    import tvm_ffi

    from tvm_tensorgpt.data.collect import open_database
    from tvm_tensorgpt.workloads.tasks import get_task

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="comma-separated task names")
    parser.add_argument("folders", nargs="+")
    args = parser.parse_args()
    names = args.tasks.split(",")
    keys = {int(tvm_ffi.structural_hash(get_task(name).mod)): name for name in names}
    print("profile: records per task, in the order " + ", ".join(names))
    for folder in map(Path, args.folders):
        for profile in sorted(p for p in folder.iterdir() if p.is_dir()):
            records = open_database(profile).get_all_tuning_records()
            counts = Counter(keys.get(int(tvm_ffi.structural_hash(r.workload.mod))) for r in records)
            print(f"{folder}/{profile.name}: {[counts[name] for name in names]}")


if __name__ == "__main__":
    main()
