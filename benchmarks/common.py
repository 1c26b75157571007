"""What the benchmark scripts share: where things live, what every result file records about how it
was made, and a harness run's cells.

Scripts run as ``python benchmarks/X.py``, which puts this folder on ``sys.path``: they ``import
common`` (and ``run`` / ``checkpoints`` for the harness's own parts) without any path set-up.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent
RESULTS = BENCHMARKS / "results"
RECORDS = ROOT / "data" / "records"  # the measured records the methods' checkpoints train on
CHECKPOINTS = BENCHMARKS / "checkpoints"  # where benchmarks/checkpoints.py puts them


def machine() -> dict:
    """The machine (key, model name, cores): wall-clock numbers mean little without it."""
    from tvm_tensorgpt.hardware import this_machine  # TVM start-up: only when a result is written

    here = this_machine()
    return {"key": here.key, "cpu": here.cpu, "cores": os.cpu_count()}


def commit() -> str:
    """The checkout's short commit ('' outside git): which code made a result."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip()


def command_line() -> str:
    """How this script was run, as typed from the repository root (to rerun it)."""
    return " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])


def provenance(command: str) -> dict:
    """Command, UTC date, commit and machine: what a result file needs to be reproduced."""
    return {"command": command, "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": commit(), "machine": machine()}  # fmt: skip


def run_meta(args: argparse.Namespace) -> dict:
    """A tuning run's meta.json: its provenance and the settings every cell shares (run.py and
    adaptation.py, whose cells come from the same harness)."""
    return provenance(command_line()) | {
        "profile": args.profile, "suite": args.suite, "trials": args.trials, "seeds": args.seeds,
        "per_round": args.per_round, "quick": args.quick}  # fmt: skip


def read_cells(path: Path) -> dict[tuple[str, str, int], dict]:
    """Finished cells of a results.jsonl by (method, task, seed): what a resumed run skips and the
    report reads."""
    cells = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: that cell runs again
            cells[(row["method"], row["task"], row.get("seed", 1))] = row
    return cells
