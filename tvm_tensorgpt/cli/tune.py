"""``tensorgpt tune``: tune a built-in workload, a network task or a model."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from typing import Any

from ..generators import GENERATOR_NAMES
from ..hardware import get_profile
from ..plugin.registration import COST_MODELS, STRATEGIES
from ..plugin.tune import tune_model, tune_module
from ..tvm_glue import TargetError, parse_target
from ..workloads import get_workload
from .usage import UsageError


def add_parser(sub: Any) -> None:
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
    tune.add_argument("--cost-model", choices=COST_MODELS,
                      help="MetaSchedule cost model (default: tensorgpt for --strategy tensorgpt, else xgb)")
    tune.add_argument("--seed", type=int, default=None)
    tune.add_argument("--generator", default="default",
                      help=f"for --strategy tensorgpt: {' | '.join(GENERATOR_NAMES)} (default: the bundled "
                      "checkpoint) | a checkpoint folder")  # fmt: skip
    tune.add_argument("--json", action="store_true", help="print one JSON object on stdout (logs go to stderr)")
    tune.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.json:
        # stdout carries only the JSON object; MetaSchedule's summary and logs go to stderr
        with contextlib.redirect_stdout(sys.stderr):
            summary = _tune(args)
        print(json.dumps(summary))
    else:
        _print_summary(_tune(args))
    return 0


def _tune(args: argparse.Namespace) -> dict:
    # torch (models, checkpoints) loads only when a tune runs: the other commands start faster
    from ..model.checkpoint import CheckpointError
    from ..workloads.models import get_model

    if args.trials < 1:
        raise UsageError("--trials must be at least 1")
    if args.per_round < 1:
        raise UsageError("--per-round must be at least 1")
    try:
        target = get_profile(args.profile) if args.profile else parse_target(args.target)
        mod = get_workload(args.workload).build() if args.workload else get_model(args.model)
    except (TargetError, ValueError) as err:
        raise UsageError(str(err)) from None
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="tensorgpt-")
    common = dict(target=target, work_dir=work_dir, trials=args.trials, strategy=args.strategy,
                  per_round=args.per_round, seed=args.seed, generator=args.generator,
                  cost_model=args.cost_model)  # fmt: skip
    try:
        result = tune_module(mod, **common) if args.workload else tune_model(args.model, **common)
    except CheckpointError as err:
        raise UsageError(str(err)) from None
    return result.to_dict()


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
