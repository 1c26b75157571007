"""``tensorgpt collect | ingest | data``: measure, import and inspect the training data."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from ..data.collect import STRATEGIES, CollectConfig, RemoteDevice, collect
from ..data.ingest import ingest
from ..data.split import heldout_reason, heldout_tasks, is_heldout, source_profiles, training_tasks
from ..data.stats import data_stats
from ..hardware import ProfileError, get_profile
from ..workloads.tasks import Task, get_task, load_tasks
from .usage import UsageError, check_positive, check_seed, check_writable_dir


def add_parsers(sub: Any) -> None:
    collect_ = sub.add_parser("collect", help="measure training records on a host profile (resumable)")
    collect_.add_argument("--profile", required=True, help="a CPU profile from `tensorgpt devices`")
    collect_.add_argument("--tasks", default="training",
                          help="training | heldout | all | comma-separated task names (default: training)")
    collect_.add_argument("--trials", type=int, default=64, help="records per task to reach (default 64)")
    collect_.add_argument("--chunk", type=int, default=CollectConfig.chunk,
                          help=f"trials per task per pass (default {CollectConfig.chunk})")
    collect_.add_argument("--max-records", type=int, help="stop once the selected tasks hold this many records")
    collect_.add_argument("--population", type=int, default=CollectConfig.population,
                          help=f"evolutionary search population (default {CollectConfig.population})")
    collect_.add_argument("--seed", type=int, default=0)
    collect_.add_argument("--strategy", choices=STRATEGIES, default=CollectConfig.strategy,
                          help="evolutionary (exploration, the default) or tensorgpt (self-training: the bundled "
                               "generator proposes, the pretrained cost model ranks; records near each task's best)")
    collect_.add_argument("--cost-model", choices=("xgb", "tensorgpt"),
                          help="default: xgb for evolutionary, tensorgpt for tensorgpt")
    collect_.add_argument("--data-dir", default="data/records", help="one database per profile below it")
    collect_.add_argument("--rpc", metavar="HOST:PORT", help="measure on the device behind this RPC tracker")
    collect_.add_argument("--rpc-key", help="the device key registered with the tracker")
    collect_.set_defaults(run=run_collect)

    ingest_ = sub.add_parser("ingest", help="turn a MetaSchedule work_dir into training data for a profile")
    ingest_.add_argument("work_dir")
    ingest_.add_argument("--profile", required=True)
    ingest_.add_argument("--data-dir", default="data/records")
    ingest_.set_defaults(run=run_ingest)

    data = sub.add_parser("data", help="what the measured data holds")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    stats = data_sub.add_parser("stats", help="records and tasks per profile, the held-out split")
    stats.add_argument("--json", action="store_true")
    stats.add_argument("--data-dir", default="data/records")
    stats.add_argument("--reference-dir", default="data/reference")
    stats.set_defaults(run=run_stats)
    validity = data_sub.add_parser("validity", help="label unmasked CUDA candidates of the training tasks with "
                                   "VerifyGPUCode for a source GPU (the GPU experts' data; resumable)")
    validity.add_argument("--profile", required=True, help="a source GPU profile (rtx4090, jetson-xavier)")
    validity.add_argument("--per-task", type=int, default=16, help="candidates per task (default 16)")
    validity.add_argument("--tasks", type=int, default=None, help="the first N training tasks (default all)")
    validity.add_argument("--out", default="data/validity")
    validity.set_defaults(run=run_validity)
    distil = data_sub.add_parser("distil", help="the shipped cost model's favourite schedules of every training "
                                 "task on every source profile, as extra training examples (no measuring; resumable)")
    distil.add_argument("--out", required=True, help="a JSONL file (re-running appends the pairs not yet there)")
    distil.add_argument("--data-dir", default="data/records", help="its profile folders are the source devices")
    distil.add_argument("--profiles", help="comma-separated source profiles (default: every one in --data-dir)")
    distil.add_argument("--tasks", type=int, default=None, help="the first N training tasks (default all)")
    distil.add_argument("--pool", type=int, help="prior draws per task and profile (default 512)")
    distil.add_argument("--keep", type=int, help="the cost model's best N kept (default 4)")
    distil.add_argument("--seed", type=int, help="(default 0)")
    distil.add_argument("--threads", type=int, help="threads realising a pool (default 2)")
    distil.set_defaults(run=run_distil)


def _select_tasks(spec: str) -> list[Task]:
    if spec == "training":
        return training_tasks()
    if spec == "heldout":
        return heldout_tasks()
    if spec == "all":
        return list(load_tasks())
    try:
        return [get_task(name.strip()) for name in spec.split(",") if name.strip()]
    except KeyError as err:
        raise UsageError(f"unknown task {err}; list them with `tensorgpt workloads --tasks`") from None


def run_collect(args: argparse.Namespace) -> int:
    try:
        profile = get_profile(args.profile)
    except ProfileError as err:
        raise UsageError(str(err)) from None
    tasks = _select_tasks(args.tasks)
    if is_heldout(profile) and (args.tasks != "heldout" or "reference" not in args.data_dir):
        raise UsageError(f"{heldout_reason(profile)}: only its reference is collected "
                         "(--tasks heldout --data-dir data/reference)")  # fmt: skip
    check_positive(args.trials, "--trials")
    check_positive(args.chunk, "--chunk")
    check_seed(args.seed)
    check_writable_dir(args.data_dir, "--data-dir")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    config = CollectConfig(trials=args.trials, chunk=args.chunk, population=args.population,
                           seed=args.seed, max_records=args.max_records, strategy=args.strategy,
                           cost_model=args.cost_model)  # fmt: skip
    if bool(args.rpc) != bool(args.rpc_key):
        raise UsageError("--rpc and --rpc-key go together (tracker host:port and the device key)")
    remote = RemoteDevice(args.rpc, args.rpc_key) if args.rpc else None
    try:
        counts = collect(profile, tasks, args.data_dir, config, command="tensorgpt " + " ".join(sys.argv[1:]),
                         remote=remote)  # fmt: skip
    except ValueError as err:
        raise UsageError(str(err)) from None
    done = sum(1 for c in counts.values() if c >= args.trials)
    print(f"{profile.name}: {sum(counts.values())} records over {len(counts)} tasks ({done} complete)")
    return 0


def run_ingest(args: argparse.Namespace) -> int:
    try:
        report = ingest(args.work_dir, get_profile(args.profile), args.data_dir,
                        command="tensorgpt " + " ".join(sys.argv[1:]))
    except (ValueError, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    print(f"read {report.read} records: {report.ingested} ingested, {report.duplicates} already there")
    for reason, count in report.skipped.items():
        print(f"  skipped {count}: {reason} (first at {report.examples[reason]})")
    return 0


def run_validity(args: argparse.Namespace) -> int:
    from ..train.validity import label_tasks  # torch: the labels are training examples

    try:
        totals = label_tasks(get_profile(args.profile), training_tasks()[: args.tasks], args.per_task, args.out)
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(f"{args.profile}: {totals['verified']} of {totals['candidates']} candidates verified over "
          f"{totals['tasks']} tasks ({args.out})")  # fmt: skip
    return 0


def run_distil(args: argparse.Namespace) -> int:
    from ..train.distill import DistillConfig, distil  # torch: the rows become training examples

    settings = {k: getattr(args, k) for k in ("pool", "keep", "seed", "threads") if getattr(args, k) is not None}
    for option in ("pool", "keep", "threads"):
        if option in settings:
            check_positive(settings[option], f"--{option}")
    if "seed" in settings:
        check_seed(settings["seed"])
    if not Path(args.data_dir).is_dir():
        raise UsageError(f"--data-dir {args.data_dir} is not a folder of profile databases (e.g. data/records)")
    profiles = [p.strip() for p in args.profiles.split(",")] if args.profiles else None
    config = DistillConfig(**settings)  # the defaults live there (torch-free parser)
    try:
        done = distil(training_tasks()[: args.tasks], source_profiles(args.data_dir, profiles), args.out, config)
    except (ValueError, ProfileError) as err:
        raise UsageError(str(err)) from None
    print(f"{args.out}: {done} (task, profile) pairs distilled now")
    return 0


def run_stats(args: argparse.Namespace) -> int:
    if not Path(args.data_dir).is_dir():
        raise UsageError(f"--data-dir {args.data_dir} is not a folder (data stats reads <data-dir>/<profile>/ "
                         "databases, e.g. data/records)")  # fmt: skip
    stats = data_stats(args.data_dir, args.reference_dir)
    for name, row in {**stats["profiles"], **stats.get("reference", {})}.items():
        if row.get("corrupt_lines"):
            print(f"tensorgpt: warning: {name}: {row['corrupt_lines']} line(s) of its records are not valid records "
                  "(not counted); `tensorgpt collect` or `tune` repairs a cut last line", file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(stats, indent=1))
        return 0
    for name, row in stats["profiles"].items():
        held = " (held out)" if row["heldout"] else ""
        made = ", ".join(f"{k} {v}" for k, v in row["by_search"].items())
        print(f"{name:20s} {row['records']:7d} records ({row['measured']} measured) over {row['tasks']} tasks, "
              f"machine {row['machine'] or '?'}{held}" + (f"; {made}" if made else ""))  # fmt: skip
    for name, row in stats.get("reference", {}).items():
        print(f"{name:20s} {row['records']:7d} reference records over {row['tasks']} held-out tasks")
    sources = stats["sources"]
    print(f"sources: {sources['records']} records, {sources['profiles']} profiles, machines "
          f"{', '.join(sources['machines']) or 'none'}; held-out profiles: {', '.join(stats['heldout_profiles'])} "
          f"(their machine and ISA); held-out tasks: {len(stats['heldout_tasks'])}")  # fmt: skip
    return 0
