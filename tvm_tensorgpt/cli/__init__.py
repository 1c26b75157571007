"""Command line: ``python -m tvm_tensorgpt`` or ``tensorgpt``; one module per command group.

  tensorgpt tune --workload matmul-128 --target host --trials 16 [--json]
  tensorgpt tune --model conv-block --trials 32
  tensorgpt workloads
  tensorgpt devices [--json] | devices show NAME | devices similarity [--plot PNG]
  tensorgpt collect | ingest | data stats | data validity
  tensorgpt train | bundle
  tensorgpt costmodel train | eval
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import costmodel, data, devices, train, tune, workloads
from .usage import UsageError


def parser() -> argparse.ArgumentParser:
    """Every command's parser; each command module adds its own and sets ``run``."""
    parser_ = argparse.ArgumentParser(prog="tensorgpt", description="TensorGPT for TVM MetaSchedule")
    sub = parser_.add_subparsers(dest="command", required=True)
    tune.add_parser(sub)
    workloads.add_parser(sub)
    data.add_parsers(sub)
    train.add_parsers(sub)
    devices.add_parser(sub)
    costmodel.add_parser(sub)
    return parser_


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as err:
        print(f"tensorgpt: error: {err}", file=sys.stderr)
        return 2
