"""``tensorgpt costmodel train | eval``: the pretrained cost model behind ``cost_model="tensorgpt"``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..costmodel import DEFAULT_COST_MODEL, CostModelError, Pretrained
from ..data.collect import open_database
from ..data.split import heldout_tasks
from ..hardware import ProfileError, get_profile, universe_standardizer
from ..train.costmodel import CostModelConfig, evaluate, record_groups, train_cost_model
from .usage import UsageError


def add_parser(sub: Any) -> None:
    costmodel = sub.add_parser("costmodel", help="train or judge the pretrained cost model")
    costmodel_sub = costmodel.add_subparsers(dest="costmodel_command", required=True)
    train = costmodel_sub.add_parser("train", help="train on the source profiles' records (held-out ones never)")
    train.add_argument("--out", default=str(DEFAULT_COST_MODEL), help="folder (default: the bundled model)")
    train.add_argument("--data-dir", default="data/records")
    train.add_argument("--profiles", help="comma-separated source profiles (default: every one in --data-dir)")
    train.add_argument("--rounds", type=int, default=CostModelConfig.rounds)
    train.add_argument("--limit", type=int, help="records read per profile (quick runs)")
    train.set_defaults(run=run_train)
    judge = costmodel_sub.add_parser("eval", help="rank correlation and top-5%% recall per task of a database")
    judge.add_argument("--model", default=str(DEFAULT_COST_MODEL))
    judge.add_argument("--data-dir", default="data/reference", help="a folder of profile databases")
    judge.add_argument("--out", help="also write the per-task rows here (JSON)")
    judge.set_defaults(run=run_eval)


def run_train(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if args.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    profiles = [p.strip() for p in args.profiles.split(",")] if args.profiles else None
    config = CostModelConfig(rounds=args.rounds, limit=args.limit)
    try:
        summary = train_cost_model(args.data_dir, args.out, config, profiles, "tensorgpt " + " ".join(sys.argv[1:]))
    except (ValueError, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    print(f"{args.out}: {summary['records']} records in {summary['groups']} (task, profile) groups")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    try:
        model = Pretrained.load(args.model)
        folders = sorted(p for p in Path(args.data_dir).iterdir() if p.is_dir())
        groups = [g for folder in folders for g in record_groups(open_database(folder), get_profile(folder.name),
                                                                 model.standardizer, [])]  # fmt: skip
    except (CostModelError, ProfileError, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    rows = evaluate(model, groups)
    held = {t.name for t in heldout_tasks()}
    print(f"{'task':60s} {'n':>4s} {'spearman':>8s} {'recall':>6s} {'random':>6s}")
    for r in rows:
        mark = "*" if r["task"] in held else " "
        print(f"{mark}{r['task'][:59]:59s} {r['records']:4d} {r['spearman']:8.2f} {r['recall']:6.2f} "
              f"{r['random_spearman']:6.2f}")  # fmt: skip
    for key in ("spearman", "recall", "random_spearman", "random_recall"):
        print(f"mean {key}: {np.nanmean([r[key] for r in rows]):.3f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "data_dir": args.data_dir, "tasks": rows}, indent=1))
    return 0
