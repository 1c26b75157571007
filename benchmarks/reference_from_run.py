"""The records a harness run measured, kept as held-out reference data for offline evaluation.

    python benchmarks/reference_from_run.py --run benchmarks/results/subgraphs_intel_native \
        --methods tensorgpt,tlm-ct [--seeds 1,2,3] --data-dir data/reference

Every cell of ``run.py`` tunes in its own MetaSchedule work_dir (kept under the system's temp
folder). This ingests the work_dirs of the chosen cells onto the run's profile (``tensorgpt
ingest``: each record checked, duplicates skipped, provenance appended), so the held-out tasks on
the held-out profile get records without a separate collection: e.g. the TensorGPT and TLM-CT
cells as the reference ``tensorgpt costmodel eval`` judges, and the Ansor cells of one seed as the
records a fresh MetaSchedule XGB is fit on (``--fresh``). Cells whose work_dir is gone (another
machine, a reboot) are listed and skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import command_line, read_cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a run.py output folder")
    parser.add_argument("--methods", required=True, help="comma-separated methods whose cells are kept")
    parser.add_argument("--seeds", help="comma-separated seeds (default: all)")
    parser.add_argument("--data-dir", required=True, help="where the profile's database goes")
    args = parser.parse_args()
    from tvm_tensorgpt.data.ingest import ingest
    from tvm_tensorgpt.hardware import get_profile

    run = Path(args.run)
    profile = get_profile(json.loads((run / "meta.json").read_text(encoding="utf-8"))["profile"])
    methods = set(args.methods.split(","))
    seeds = {int(s) for s in args.seeds.split(",")} if args.seeds else None
    command = command_line()
    missing = []
    for (method, task, seed), cell in sorted(read_cells(run / "results.jsonl").items()):
        if method not in methods or (seeds and seed not in seeds):
            continue
        work_dir = Path(cell["extra"]["work_dir"])
        if not work_dir.is_dir():
            missing.append(f"{method} {task} seed {seed}")
            continue
        report = ingest(work_dir, profile, args.data_dir, command=command)
        print(f"{method} {task} seed {seed}: {report.ingested} ingested, {report.duplicates} already there")
    if missing:
        print(f"{len(missing)} cells have no work_dir here (skipped): {'; '.join(missing)}", file=sys.stderr)


if __name__ == "__main__":
    main()
