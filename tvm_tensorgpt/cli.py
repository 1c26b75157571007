"""Command line: ``python -m tvm_tensorgpt`` or ``tensorgpt``.

  tensorgpt tune --workload matmul-128 --target host --trials 16 [--json]
  tensorgpt tune --model conv-block --trials 32
  tensorgpt workloads
  tensorgpt devices [--json] | devices show NAME | devices similarity [--plot PNG]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model.config import ModelConfig

STRATEGIES = ("tensorgpt", "evolutionary", "replay-trace", "replay-func")


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tensorgpt", description="TensorGPT for TVM MetaSchedule")
    sub = parser.add_subparsers(dest="command", required=True)

    tune = sub.add_parser("tune", help="tune a built-in workload or model")
    what = tune.add_mutually_exclusive_group(required=True)
    what.add_argument("--workload", help="a TIR workload (see `tensorgpt workloads`)")
    what.add_argument("--model", help="a PyTorch model tuned through relax (see `tensorgpt workloads`)")
    where = tune.add_mutually_exclusive_group()
    where.add_argument("--profile", help="a hardware profile (see `tensorgpt devices`); its runner uses its cores")
    where.add_argument(
        "--target",
        default="host",
        help='JSON target dict, e.g. \'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}\', a TVM tag, '
        'or "host" (default: auto-detected)',
    )
    tune.add_argument("--trials", type=int, default=64, help="measurement budget (default 64)")
    tune.add_argument("--per-round", type=int, default=16, help="candidates measured per round")
    tune.add_argument("--work-dir", help="MetaSchedule work_dir; re-running with it resumes (default: new temp dir)")
    tune.add_argument("--strategy", default="tensorgpt", choices=STRATEGIES)
    tune.add_argument("--seed", type=int, default=None)
    tune.add_argument("--generator", default="default",
                      help="for --strategy tensorgpt: default (the bundled checkpoint) | prior | a checkpoint folder")
    tune.add_argument("--json", action="store_true", help="print one JSON object on stdout (logs go to stderr)")

    workloads = sub.add_parser("workloads", help="list built-in workloads, models and network tasks")
    workloads.add_argument("--tasks", action="store_true", help="also list every task of the five networks")
    workloads.add_argument("--extract", metavar="PATH", help="re-extract the network tasks into PATH (.json.gz)")

    collect = sub.add_parser("collect", help="measure training records on a host profile (resumable)")
    collect.add_argument("--profile", required=True, help="a CPU profile from `tensorgpt devices`")
    collect.add_argument("--tasks", default="training",
                         help="training | heldout | all | comma-separated task names (default: training)")
    collect.add_argument("--trials", type=int, default=64, help="records per task to reach (default 64)")
    collect.add_argument("--chunk", type=int, default=16, help="trials per task per pass (default 16)")
    collect.add_argument("--max-records", type=int, help="stop once the selected tasks hold this many records")
    collect.add_argument("--population", type=int, default=256, help="evolutionary search population")
    collect.add_argument("--seed", type=int, default=0)
    collect.add_argument("--data-dir", default="data/records", help="one database per profile below it")
    collect.add_argument("--rpc", metavar="HOST:PORT", help="measure on the device behind this RPC tracker")
    collect.add_argument("--rpc-key", help="the device key registered with the tracker")

    ingest = sub.add_parser("ingest", help="turn a MetaSchedule work_dir into training data for a profile")
    ingest.add_argument("work_dir")
    ingest.add_argument("--profile", required=True)
    ingest.add_argument("--data-dir", default="data/records")

    data = sub.add_parser("data", help="what the measured data holds")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    stats = data_sub.add_parser("stats", help="records and tasks per profile, the held-out split")
    stats.add_argument("--json", action="store_true")
    stats.add_argument("--data-dir", default="data/records")
    stats.add_argument("--reference-dir", default="data/reference")
    validity = data_sub.add_parser("validity", help="label unmasked CUDA candidates of the training tasks with "
                                   "VerifyGPUCode for a source GPU (the GPU experts' data; resumable)")
    validity.add_argument("--profile", required=True, help="a source GPU profile (rtx4090, jetson-xavier)")
    validity.add_argument("--per-task", type=int, default=16, help="candidates per task (default 16)")
    validity.add_argument("--tasks", type=int, default=None, help="the first N training tasks (default all)")
    validity.add_argument("--out", default="data/validity")

    train = sub.add_parser("train", help="train the generator on the measured records (resumable)")
    train.add_argument("--out", required=True, help="checkpoint folder (re-running resumes)")
    train.add_argument("--stage", choices=("base", "experts"), default="base",
                       help="base: the whole network; experts: one LoRA expert per profile, then the router")
    train.add_argument("--base", help="for --stage experts: a base checkpoint, or an experts checkpoint "
                       "whose experts are kept (only the router is trained: the routing ablations)")
    train.add_argument("--init", help="for --stage base: continue from this checkpoint (TLM-CT)")
    train.add_argument("--variant", default="tensorgpt",
                       help="tensorgpt | no-hg | no-routing | no-wa | tlm (the benchmark's rows)")
    train.add_argument("--data-dir", default="data/records")
    train.add_argument("--profiles", help="comma-separated source profiles (default: every one in --data-dir)")
    train.add_argument("--validity-dir", help="also train on the GPU validity labels there (`data validity`): "
                       "one more expert per labelled GPU")
    train.add_argument("--epochs", type=int, default=3)
    train.add_argument("--batch", type=int, default=16)
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--threads", type=int, default=2,
                       help="torch threads (use 1 while a collection or tuning job runs beside it)")
    train.add_argument("--hidden", type=int, default=256)
    train.add_argument("--layers", type=int, default=4)

    bundle = sub.add_parser("bundle", help="ship a trained checkpoint as the package's default (float16)")
    bundle.add_argument("checkpoint", help="a trained checkpoint folder (e.g. from `train --stage experts`)")
    bundle.add_argument("--out", help="destination (default: the package's tvm_tensorgpt/model/default)")
    bundle.add_argument("--note", default="", help="free text for provenance.json (e.g. the data commit)")
    devices = sub.add_parser("devices", help="hardware profiles and their 24-D vectors")
    devices.add_argument("--json", action="store_true", help="a JSON list: name, bucket, kind, target, raw, vector")
    devices.add_argument("--file", action="append", default=[], help="also load a device JSON/TOML file")
    devices_sub = devices.add_subparsers(dest="devices_command")
    show = devices_sub.add_parser("show", help="explain one device's vector dimension by dimension")
    show.add_argument("name")
    similarity = devices_sub.add_parser("similarity", help="cosine similarity of the model-facing vectors")
    similarity.add_argument("--plot", help="write the matrix as a PNG here")
    return parser


def _cmd_workloads(args: argparse.Namespace) -> int:
    from .workloads import WORKLOADS
    from .workloads.models import MODELS
    from .workloads.tasks import REPRESENTATIVE, extract_tasks, load_tasks, save_tasks

    if args.extract:
        tasks = extract_tasks()
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
    print(f"Network tasks (--workload NAME): {len(tasks)}, of which {len(REPRESENTATIVE)} held out "
          "(the representative subgraphs, marked *)")  # fmt: skip
    if args.tasks:
        for t in tasks:
            mark = "*" if t.name in REPRESENTATIVE else " "
            print(f" {mark}{t.name:70s} {t.kind:16s} x{t.weight}")
    return 0


def _cmd_devices(args: argparse.Namespace) -> int:
    from .hardware import DIMENSIONS, ProfileError, all_profiles, get_profile, load_profile_file, raw_vector
    from .hardware.vector import Standardizer

    try:
        extra = [load_profile_file(path) for path in args.file]
        profiles = all_profiles() + extra
        standardize = Standardizer.fit(profiles)
        if args.devices_command == "show":
            names = {p.name: p for p in profiles}
            profile = names[args.name] if args.name in names else get_profile(args.name)
    except (ProfileError, OSError) as err:
        raise _UsageError(str(err)) from None
    if args.devices_command == "show":
        print(f"{profile.name}: {profile.kind}, bucket {profile.bucket}, target {json.dumps(profile.target)}")
        raw, vector = raw_vector(profile), standardize(profile)
        print(f"{'#':>2} {'dimension':24s} {'unit':12s} {'transform':9s} {'raw':>9s} {'model-facing':>12s}  source")
        for i, (dim, r, v) in enumerate(zip(DIMENSIONS, raw, vector)):
            print(f"{i:2d} {dim.name:24s} {dim.unit:12s} {dim.transform:9s} {r:9.3f} {v:12.3f}  {dim.source}")
        for fields_, doc in profile.sources.items():
            print(f"source of {fields_}: {doc}")
        return 0
    if args.devices_command == "similarity":
        return _similarity(profiles, standardize, args.plot)
    if args.json:
        print(json.dumps([{"name": p.name, "bucket": p.bucket, "kind": p.kind, "target": p.target,
                           "raw": p.raw(), "vector": [round(float(x), 6) for x in standardize(p)]}
                          for p in profiles], indent=1))  # fmt: skip
        return 0
    print(f"{'name':18s} {'kind':4s} {'bucket':15s} target")
    for p in profiles:
        print(f"{p.name:18s} {p.kind:4s} {p.bucket:15s} {json.dumps(p.target)}")
    return 0


def _similarity(profiles: list, standardize: object, plot: str | None) -> int:
    import numpy as np

    vectors = np.stack([standardize(p) for p in profiles])  # type: ignore[operator]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix = unit @ unit.T
    names = [p.name for p in profiles]
    print(" " * 18 + " ".join(f"{n[:7]:>7s}" for n in names))
    for name, row in zip(names, matrix):
        print(f"{name:18s}" + " ".join(f"{v:7.2f}" for v in row))
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 7))
        image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(names)), names, rotation=60, ha="right")
        ax.set_yticks(range(len(names)), names)
        for i in range(len(names)):
            for j in range(len(names)):
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7)
        fig.colorbar(image, label="cosine similarity")
        ax.set_title("Model-facing (standardized) 24-D hardware vectors")
        fig.text(0.01, 0.01, "python -m tvm_tensorgpt devices similarity --plot ...; standardized over these "
                 "profiles", fontsize=7)  # fmt: skip
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
        print(f"wrote {plot}")
    return 0


def _select_tasks(spec: str) -> list:
    from .workloads.tasks import get_task, heldout_tasks, load_tasks, training_tasks

    if spec == "training":
        return training_tasks()
    if spec == "heldout":
        return heldout_tasks()
    if spec == "all":
        return list(load_tasks())
    try:
        return [get_task(name.strip()) for name in spec.split(",") if name.strip()]
    except KeyError as err:
        raise _UsageError(f"unknown task {err}; list them with `tensorgpt workloads --tasks`") from None


def _cmd_collect(args: argparse.Namespace) -> int:
    import logging

    from .data.collect import CollectConfig, RemoteDevice, collect
    from .hardware import HELDOUT_HOST, ProfileError, get_profile

    try:
        profile = get_profile(args.profile)
    except ProfileError as err:
        raise _UsageError(str(err)) from None
    tasks = _select_tasks(args.tasks)
    if profile.name == HELDOUT_HOST and (args.tasks != "heldout" or "reference" not in args.data_dir):
        raise _UsageError(f"{HELDOUT_HOST} is the held-out profile: only its reference is collected "
                          "(--tasks heldout --data-dir data/reference)")  # fmt: skip
    if min(args.trials, args.chunk) < 1:
        raise _UsageError("--trials and --chunk must be at least 1")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    config = CollectConfig(trials=args.trials, chunk=args.chunk, population=args.population,
                           seed=args.seed, max_records=args.max_records)  # fmt: skip
    if bool(args.rpc) != bool(args.rpc_key):
        raise _UsageError("--rpc and --rpc-key go together (tracker host:port and the device key)")
    remote = RemoteDevice(args.rpc, args.rpc_key) if args.rpc else None
    try:
        counts = collect(profile, tasks, args.data_dir, config, command="tensorgpt " + " ".join(sys.argv[1:]),
                         remote=remote)  # fmt: skip
    except ValueError as err:
        raise _UsageError(str(err)) from None
    done = sum(1 for c in counts.values() if c >= args.trials)
    print(f"{profile.name}: {sum(counts.values())} records over {len(counts)} tasks ({done} complete)")
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    from .data.ingest import ingest
    from .hardware import ProfileError, get_profile

    try:
        report = ingest(args.work_dir, get_profile(args.profile), args.data_dir)
    except (ProfileError, FileNotFoundError) as err:
        raise _UsageError(str(err)) from None
    print(f"read {report.read} records: {report.ingested} ingested, {report.duplicates} already there")
    for reason, count in report.skipped.items():
        print(f"  skipped {count}: {reason} (first at {report.examples[reason]})")
    return 0


def _cmd_data(args: argparse.Namespace) -> int:
    from .data.stats import data_stats

    if args.data_command == "validity":
        from .hardware import get_profile
        from .train.validity import label_tasks
        from .workloads.tasks import training_tasks

        try:
            totals = label_tasks(get_profile(args.profile), training_tasks()[: args.tasks], args.per_task, args.out)
        except ValueError as err:
            raise _UsageError(str(err)) from None
        print(f"{args.profile}: {totals['verified']} of {totals['candidates']} candidates verified over "
              f"{totals['tasks']} tasks ({args.out})")  # fmt: skip
        return 0

    stats = data_stats(args.data_dir, args.reference_dir)
    if args.json:
        print(json.dumps(stats, indent=1))
        return 0
    for name, row in stats["profiles"].items():
        print(f"{name:16s} {row['records']:7d} records ({row['measured']} measured) over {row['tasks']} tasks")
    for name, row in stats.get("reference", {}).items():
        print(f"{name:16s} {row['records']:7d} reference records over {row['tasks']} held-out tasks")
    print(f"held-out profile: {stats['heldout_profile']}; held-out tasks: {len(stats['heldout_tasks'])}")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    import logging

    from .model.checkpoint import read_config
    from .model.config import EXPERT_VARIANTS, variant_config
    from .train.trainer import TrainConfig, load_examples, train, train_experts

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    profiles = [p.strip() for p in args.profiles.split(",")] if args.profiles else None
    config = TrainConfig(epochs=args.epochs, batch=args.batch, lr=args.lr, seed=args.seed, threads=args.threads)
    try:
        model = variant_config(args.variant, hidden=args.hidden, layers=args.layers)
        if args.stage == "experts":
            if not args.base:
                raise _UsageError("--stage experts needs --base (a base checkpoint from --stage base)")
            if args.variant not in EXPERT_VARIANTS:
                raise _UsageError(f"variant {args.variant} has no experts; experts: {', '.join(EXPERT_VARIANTS)}")
            by_profile = load_examples(args.data_dir, read_config(args.base), profiles)
            by_profile |= _validity_examples(args.validity_dir, read_config(args.base))
            state = train_experts(by_profile, args.base, args.out, config, model.routing, model.workload_aware)
        else:
            by_profile = load_examples(args.data_dir, model, profiles) | _validity_examples(args.validity_dir, model)
            state = train([e for rows in by_profile.values() for e in rows], args.out, model, config, args.init)
    except (ValueError, FileNotFoundError) as err:
        raise _UsageError(str(err)) from None
    last = state["history"][-1] if state["history"] else {}
    print(f"{args.out}: trained ({args.stage}); last {last}")
    return 0


def _validity_examples(directory: str | None, model: ModelConfig) -> dict:
    """GPU profile -> its verified validity labels as examples (none without ``--validity-dir``)."""
    from .train.validity import load_validity_examples

    return load_validity_examples(directory, model) if directory is not None else {}


def _cmd_bundle(args: argparse.Namespace) -> int:
    import datetime

    from .model.checkpoint import CheckpointError, bundle_checkpoint
    from .model.generator import DEFAULT_CHECKPOINT

    provenance = {"date": datetime.date.today().isoformat(), "command": " ".join(["tensorgpt", *sys.argv[1:]]),
                  "note": args.note}  # fmt: skip
    try:
        dest = bundle_checkpoint(args.checkpoint, args.out or DEFAULT_CHECKPOINT, provenance)
    except CheckpointError as err:
        raise _UsageError(str(err)) from None
    size = (dest / "model.safetensors").stat().st_size / 2**20
    print(f"{dest}: bundled {args.checkpoint} ({size:.1f} MiB)")
    return 0


def _cmd_tune(args: argparse.Namespace) -> dict:
    from .hardware import get_profile
    from .model.checkpoint import CheckpointError
    from .plugin.target import TargetError, parse_target
    from .plugin.tune import tune_model, tune_module
    from .workloads import get_workload
    from .workloads.models import get_model

    if args.trials < 1:
        raise _UsageError("--trials must be at least 1")
    if args.per_round < 1:
        raise _UsageError("--per-round must be at least 1")
    try:
        target = get_profile(args.profile) if args.profile else parse_target(args.target)
        mod = get_workload(args.workload).build() if args.workload else get_model(args.model)
    except (TargetError, ValueError) as err:
        raise _UsageError(str(err)) from None
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="tensorgpt-")
    common = dict(target=target, work_dir=work_dir, trials=args.trials, strategy=args.strategy,
                  per_round=args.per_round, seed=args.seed, generator=args.generator)  # fmt: skip
    try:
        result = tune_module(mod, **common) if args.workload else tune_model(args.model, **common)
    except CheckpointError as err:
        raise _UsageError(str(err)) from None
    return {
        "trials": result.trials,
        "generated": result.generated,
        "valid": result.valid,
        "records_valid": result.records_valid,
        "best_us": result.best_us,
        "wall_s": round(result.wall_s, 2),
        "work_dir": result.work_dir,
        "strategy": result.strategy,
        "target": result.target,
        "profile": result.profile,
        "tasks": result.tasks,
        **result.extra,
    }


def _print_summary(summary: dict) -> None:
    print(f"\nwork_dir: {summary['work_dir']}")
    print(f"trials: {summary['trials']} ({summary['records_valid']} measured OK)")
    if summary["generated"]:
        print(f"TensorGPT candidates: {summary['generated']} generated, {summary['valid']} valid after postprocs")
    if "model" in summary:
        print(f"model latency: tuned {summary['tuned_us']:.1f} us, untuned {summary['untuned_us']:.1f} us "
              f"({summary['kernels_replaced']} kernels replaced from the database)")  # fmt: skip
    elif summary["best_us"] is not None:
        print(f"best latency: {summary['best_us']:.1f} us")
    print(f"wall time: {summary['wall_s']:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "workloads":
            return _cmd_workloads(args)
        if args.command == "devices":
            return _cmd_devices(args)
        if args.command == "collect":
            return _cmd_collect(args)
        if args.command == "ingest":
            return _cmd_ingest(args)
        if args.command == "data":
            return _cmd_data(args)
        if args.command == "train":
            return _cmd_train(args)
        if args.command == "bundle":
            return _cmd_bundle(args)
        if args.json:
            # stdout carries only the JSON object; MetaSchedule's summary and logs go to stderr
            with contextlib.redirect_stdout(sys.stderr):
                summary = _cmd_tune(args)
            print(json.dumps(summary))
        else:
            _print_summary(_cmd_tune(args))
        return 0
    except _UsageError as err:
        print(f"tensorgpt: error: {err}", file=sys.stderr)
        return 2
