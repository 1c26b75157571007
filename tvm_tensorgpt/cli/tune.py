"""``tensorgpt tune``: tune a built-in workload, a network task or a model."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..generators import GENERATOR_NAMES, check_generator_spec
from ..hardware import ProfileError, get_profile
from ..plugin.registration import COST_MODELS, STRATEGIES
from ..plugin.strategy import STOP
from ..plugin.tune import tune_model, tune_module
from ..tvm_glue import TargetError, parse_target
from ..workloads import get_workload
from .usage import UsageError, check_positive, check_seed, check_writable_dir


def add_parser(sub: Any) -> None:
    tune = sub.add_parser("tune", help="tune a built-in workload or model")
    what = tune.add_mutually_exclusive_group(required=True)
    what.add_argument("--workload", help="a TIR workload (see `tensorgpt workloads`)")
    what.add_argument("--model", help="a PyTorch model tuned through relax: a built-in name (see `tensorgpt "
                      "workloads`), a .pt2 file (torch.export.save) or file.py:function (returns the module and a "
                      "tuple of example inputs)")
    tune.add_argument("--export", metavar="LIB.so", help="with --model: write the tuned model as a library "
                      "(relax executable, export_library)")
    where = tune.add_mutually_exclusive_group()
    where.add_argument("--profile", help="a hardware profile (see `tensorgpt devices`); its runner uses its cores")
    where.add_argument(
        "--target",
        default="host",
        help='JSON target dict, e.g. \'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}\', a TVM tag, '
        'or "host" (default: auto-detected)',
    )
    tune.add_argument("--trials", type=int, default=64, help="measurement budget (default 64); with --model, 0 "
                      "compiles with predicted schedules only (no measurement)")
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
    tune.add_argument("--verbose", action="store_true", help="also show MetaSchedule's own log (task tables, "
                      "rounds) on the console; it is always written to WORK_DIR/logs")
    tune.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.json:
        # stdout carries only the JSON object; MetaSchedule's summary and logs go to stderr
        with contextlib.redirect_stdout(sys.stderr):
            summary = _tune(args)
        print(json.dumps(summary))
    else:
        summary = _tune(args)
        _print_summary(summary)
    if summary.get("matches_pytorch") is False:
        return 1
    if STOP.is_set():
        print(f"tensorgpt: interrupted; {summary['trials']} records are kept in {summary['work_dir']}: run the same "
              f"command with --work-dir {summary['work_dir']} to resume", file=sys.stderr)  # fmt: skip
        return 130
    return 0


@contextlib.contextmanager
def _stop_on_sigint(graceful: bool, work_dir: str) -> Iterator[None]:
    """Ctrl-C during a tune: with TensorGPT's strategy, the first stops after the batch being
    measured (``STOP``) and the tune returns its summary; a second one, or any with a stock strategy
    (which cannot stop early), ends the process at once with one line. MetaSchedule appends each
    record as it is measured, and a cut last line is repaired on resume, so nothing measured is lost."""

    def abort(*_: Any) -> None:
        print(f"tensorgpt: aborted; the records measured so far are kept in {work_dir}: run the same command "
              f"with --work-dir {work_dir} to resume", file=sys.stderr, flush=True)  # fmt: skip
        os._exit(130)

    def stop(*_: Any) -> None:
        STOP.set()
        print("tensorgpt: stopping after the batch being measured (Ctrl-C again to abort)", file=sys.stderr,
              flush=True)  # fmt: skip
        signal.signal(signal.SIGINT, abort)

    STOP.clear()
    previous = signal.signal(signal.SIGINT, stop if graceful else abort)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _tune(args: argparse.Namespace) -> dict:
    if args.trials == 0 and not args.model:
        raise UsageError("--trials 0 compiles a model with predicted schedules only: use it with --model")
    if args.trials != 0:
        check_positive(args.trials, "--trials")
    check_positive(args.per_round, "--per-round")
    check_seed(args.seed)
    if args.work_dir:
        check_writable_dir(args.work_dir, "--work-dir")
    try:
        check_generator_spec(args.generator)
    except ValueError as err:
        raise UsageError(f"--{err}") from None
    if args.export:
        if not args.model:
            raise UsageError("--export writes a tuned model: use it with --model")
        if not Path(args.export).parent.is_dir():
            raise UsageError(f"--export {args.export}: the folder {Path(args.export).parent} does not exist")
        check_writable_dir(Path(args.export).parent, "--export's folder")
    try:
        target = get_profile(args.profile) if args.profile else parse_target(args.target)
        mod = get_workload(args.workload).build() if args.workload else None
    except (TargetError, ValueError) as err:
        raise UsageError(str(err)) from None
    # torch (models, checkpoints) loads only once the inputs are checked: bad ones are refused fast
    from ..model.checkpoint import CheckpointError
    from ..workloads.models import ModelError

    work_dir = args.work_dir or tempfile.mkdtemp(prefix="tensorgpt-")
    if not args.verbose:
        # MetaSchedule gives its console handler the level its logger has when a tune starts (and
        # its log files everything): WARNING keeps its task tables off the console, in work_dir/logs
        logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    common = dict(target=target, work_dir=work_dir, trials=args.trials, strategy=args.strategy,
                  per_round=args.per_round, seed=args.seed, generator=args.generator,
                  cost_model=args.cost_model)  # fmt: skip
    try:
        with _stop_on_sigint(args.strategy == "tensorgpt", work_dir):
            result = tune_module(mod, **common) if mod is not None else tune_model(args.model, export=args.export,
                                                                                    **common)  # fmt: skip
    except (CheckpointError, TargetError, ProfileError, ModelError) as err:
        raise UsageError(str(err)) from None
    return result.to_dict()


def _print_summary(summary: dict) -> None:
    print(f"\nwork_dir: {summary['work_dir']}")
    print(f"trials: {summary['trials']} ({summary['records_valid']} measured OK)")
    if summary["generated"]:
        print(f"TensorGPT candidates: {summary['generated']} generated, {summary['valid']} valid after postprocs")
    if "model" in summary:
        _print_model_table(summary)
    elif summary["best_us"] is not None:
        print(f"best latency: {summary['best_us']:.1f} us")
    if "model" not in summary:
        print(f"wall time: {summary['wall_s']:.1f} s")
    if summary.get("library"):
        print(f"library: {summary['library']}; run it with\n"
              f"  lib = tvm.runtime.load_module({summary['library']!r})\n"
              "  vm = tvm.relax.VirtualMachine(lib, tvm.cpu()); out = vm['main'](*inputs)  # numpy via tvm.runtime.tensor")


def _print_model_table(summary: dict) -> None:
    """The end-of-run table: latencies against PyTorch eager, where each kernel's schedule came
    from, wall time, and whether the output matches PyTorch."""
    eager = summary["eager_us"]
    print(f"\n{summary['model']} on {summary['profile'] or 'this machine'}          latency   vs PyTorch eager")
    for label, key in (("tuned (" + summary["strategy"] + ")", "tuned_us"), ("untuned (TVM default loops)", "untuned_us"),
                       ("PyTorch eager, same cores", "eager_us")):  # fmt: skip
        print(f"  {label:<30} {summary[key] / 1000:>9.2f} ms   {summary[key] / eager:>6.2f}x")
    naive = summary["kernels"] - summary["kernels_measured"] - summary["kernels_predicted"]
    print(f"kernels: {summary['kernels']} = {summary['kernels_measured']} measured ({summary['trials']} trials) + "
          f"{summary['kernels_predicted']} predicted (no measurement) + {naive} default loops")
    print(f"wall time: {summary['wall_s']:.1f} s (tuning {summary['tuning_s']:.1f} s, predicting "
          f"{summary.get('prediction_s', 0.0):.1f} s)")
    print("output: matches PyTorch (rtol 1e-2)" if summary["matches_pytorch"] else
          "output: DIFFERS from PyTorch's (rtol 1e-2): do not deploy this build; please report it")  # fmt: skip
