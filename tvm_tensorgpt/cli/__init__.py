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

from ..hardware import ProfileError, add_device_file
from . import costmodel, data, devices, train, tune, workloads
from .usage import UsageError


def parser() -> argparse.ArgumentParser:
    """Every command's parser; each command module adds its own and sets ``run``."""
    parser_ = argparse.ArgumentParser(prog="tensorgpt", description="TensorGPT for TVM MetaSchedule")
    parser_.add_argument("--device-file", action="append", default=[], metavar="FILE",
                         help="a device described in JSON/TOML (docs/hardware.md): its name then works wherever "
                         "a profile name does (repeatable; before the command)")  # fmt: skip
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
        for path in args.device_file:
            try:
                add_device_file(path)
            except (ProfileError, OSError) as err:
                raise UsageError(str(err)) from None
        return args.run(args)
    except UsageError as err:
        print(f"tensorgpt: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # MetaSchedule writes each measured batch as it finishes; a cut last line is repaired on resume
        where = getattr(args, "work_dir", None) or getattr(args, "data_dir", None)
        kept = f" in {where}" if where else ""
        print(f"tensorgpt: interrupted; what was measured is kept{kept}: run the same command again to resume",
              file=sys.stderr)  # fmt: skip
        return 130
