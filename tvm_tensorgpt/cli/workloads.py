"""``tensorgpt workloads``: the built-in workloads, models and network tasks."""

from __future__ import annotations

import argparse
from typing import Any

from ..data.split import HELDOUT_TASKS
from ..workloads import WORKLOADS
from ..workloads.tasks import extract_tasks, load_tasks, save_tasks


def add_parser(sub: Any) -> None:
    workloads = sub.add_parser("workloads", help="list built-in workloads, models and network tasks")
    workloads.add_argument("--tasks", action="store_true", help="also list every task of the five networks")
    workloads.add_argument("--extract", metavar="PATH", help="re-extract the network tasks into PATH (.json.gz)")
    workloads.add_argument("--networks", help="with --extract: only these networks (comma-separated); the "
                           "committed tasks of the others are kept as they are")
    workloads.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..workloads.models import MODELS  # torch: the models are PyTorch modules

    if args.extract:
        only = [n.strip() for n in args.networks.split(",") if n.strip()] if args.networks else None
        keep = [t for t in load_tasks() if t.networks[0] not in only] if only else []
        tasks = extract_tasks(only, keep)
        save_tasks(tasks, args.extract)
        print(f"wrote {len(tasks)} tasks to {args.extract}")
        return 0
    print("TIR workloads (--workload):")
    for w in WORKLOADS.values():
        print(f"  {w.name:22s} {w.kind:18s} {w.description}")
    print("Models via relax (--model):")
    for m in MODELS.values():
        print(f"  {m.name:22s} {m.description}")
    tasks = load_tasks()
    print(f"Network tasks (--workload NAME): {len(tasks)}, of which {len(HELDOUT_TASKS)} held out "
          "(the representative subgraphs, marked *)")  # fmt: skip
    if args.tasks:
        for t in tasks:
            mark = "*" if t.name in HELDOUT_TASKS else " "
            print(f" {mark}{t.name:70s} {t.kind:16s} x{t.weight}")
    return 0
