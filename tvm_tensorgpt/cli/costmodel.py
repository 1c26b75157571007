"""``tensorgpt costmodel train | eval``: the pretrained cost model behind ``cost_model="tensorgpt"``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..costmodel import DEFAULT_COST_MODEL, CostModelError, Pretrained, TensorGPTCostModel
from ..data.collect import first_measured, open_database
from ..data.split import heldout_tasks
from ..hardware import ProfileError, get_profile, universe_standardizer
from ..train.costmodel import CostModelConfig, evaluate, fresh_xgb, record_groups, train_cost_model
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
    judge.add_argument("--fresh", help="a folder of profile databases (same profile names, e.g. one 64-trial "
                       "Ansor tune of each task): also in-tune models per task fit on its records there — a "
                       "fresh MetaSchedule XGB, and --model with its per-task residual")
    judge.add_argument("--fresh-records", type=int, help="fit the in-tune models on only the first N records "
                       "of each task in --fresh, in the order they were measured (what a tune of N trials knew)")
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
        if args.fresh and not Path(args.fresh).is_dir():
            raise FileNotFoundError(f"--fresh {args.fresh} is not a folder of profile databases")
        if args.fresh_records is not None and (args.fresh_records < 1 or not args.fresh):
            raise UsageError("--fresh-records needs --fresh and must be at least 1")
        per_task = args.fresh_records or sys.maxsize
        folders_fresh = [f for f in Path(args.fresh).iterdir() if f.is_dir()] if args.fresh else []
        fresh = {f.name: first_measured(f, per_task) for f in folders_fresh}
        learners = {"fresh": fresh_xgb, "tuned": lambda: TensorGPTCostModel(args.model)}
        groups = [g for folder in folders for g in record_groups(open_database(folder), get_profile(folder.name),
                                                                 model.standardizer, [], fresh=fresh.get(folder.name),
                                                                 learners=learners)]  # fmt: skip
    except (CostModelError, ProfileError, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    rows = evaluate(model, groups)
    held = {t.name for t in heldout_tasks()}
    scorers = list(dict.fromkeys(k.removesuffix("spearman") for r in rows for k in r if k.endswith("spearman")))
    print(f"{'task':60s} {'n':>4s} " + " ".join(f"{p + 'spearman':>15s} {p + 'recall':>13s}" for p in scorers))
    for r in rows:
        mark = "*" if r["task"] in held else " "
        values = " ".join(f"{r.get(p + 'spearman', float('nan')):15.2f} {r.get(p + 'recall', float('nan')):13.2f}"
                          for p in scorers)  # fmt: skip
        print(f"{mark}{r['task'][:59]:59s} {r['records']:4d} {values}")
    for key in (p + m for p in scorers for m in ("spearman", "recall")):
        print(f"mean {key}: {np.nanmean([r.get(key, np.nan) for r in rows]):.3f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "data_dir": args.data_dir, "fresh": args.fresh,
                                              "fresh_records": args.fresh_records,
                                              "command": "tensorgpt " + " ".join(sys.argv[1:]), "tasks": rows},
                                             indent=1))  # fmt: skip
    return 0
