"""``tensorgpt train | bundle``: train the generator on measured records, ship a checkpoint.

torch loads inside the commands only (start-up cost for every other command).
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
from pathlib import Path
from typing import Any

from .usage import UsageError, check_positive, check_seed, check_writable_dir


def add_parsers(sub: Any) -> None:
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
    train.add_argument("--distilled", help="also train on the examples of a `data distil` file (the cost model's "
                       "favourites; examples of a profile outside the records' count as one more source)")
    train.add_argument("--min-weight", type=float, default=0.0,
                       help="leave out records weighing less (0.05: over ~2.1x slower than their task's best)")
    train.add_argument("--epochs", type=int, default=3)
    train.add_argument("--batch", type=int, default=16)
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--threads", type=int, default=2,
                       help="torch threads (use 1 while a collection or tuning job runs beside it)")
    train.add_argument("--hidden", type=int, default=256)
    train.add_argument("--layers", type=int, default=4)
    train.set_defaults(run=run_train)

    bundle = sub.add_parser("bundle", help="ship a trained checkpoint as the package's default (float16)")
    bundle.add_argument("checkpoint", help="a trained checkpoint folder (e.g. from `train --stage experts`)")
    bundle.add_argument("--out", help="destination (default: the package's tvm_tensorgpt/model/default)")
    bundle.add_argument("--note", default="", help="free text for provenance.json (e.g. the data commit)")
    bundle.add_argument("--reference", default="data/reference",
                        help="held-out records the checkpoint must fit better than the uniform prior and rank by "
                             "speed (default data/reference)")
    bundle.add_argument("--prior-mix", type=float, default=0.0,
                        help="judge the checkpoint as sampled with this per-token prior mix (default 0: alone)")
    bundle.add_argument("--force", action="store_true", help="ship it even if it fails that rule (the numbers "
                        "are still recorded)")
    bundle.set_defaults(run=run_bundle)


def run_train(args: argparse.Namespace) -> int:
    for option in ("epochs", "batch", "threads", "hidden", "layers"):
        check_positive(getattr(args, option), f"--{option}")
    if args.distilled is not None and not Path(args.distilled).is_file():
        raise UsageError(f"--distilled {args.distilled} is not a file; make one with "
                         "`tensorgpt data distil --out FILE`")
    if not 0.0 <= args.min_weight <= 1.0:
        raise UsageError(f"--min-weight is a weight in 0..1, not {args.min_weight}")
    if not args.lr > 0 or args.lr != args.lr:
        raise UsageError(f"--lr must be a positive number, not {args.lr}")
    check_seed(args.seed)
    check_writable_dir(args.out, "--out")
    if not Path(args.data_dir).is_dir():
        raise UsageError(f"--data-dir {args.data_dir} is not a folder of profile databases (e.g. data/records)")
    # torch: see the module docstring
    from ..model.checkpoint import read_config
    from ..model.config import EXPERT_VARIANTS, variant_config
    from ..train.distill import distilled_examples, fingerprint
    from ..train.trainer import TrainConfig, load_examples, train, train_experts, training_data
    from ..train.validity import load_validity_examples

    def extra(model: Any, by_profile: dict) -> dict:
        """Profile -> examples: the records', plus the distilled ones and the GPU validity labels."""
        if args.distilled is not None:
            for name, rows in distilled_examples(args.distilled, model, profiles).items():
                by_profile[name] = by_profile.get(name, []) + rows
        if args.validity_dir is not None:
            by_profile |= load_validity_examples(args.validity_dir, model)
        return by_profile

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    profiles = [p.strip() for p in args.profiles.split(",")] if args.profiles else None
    config = TrainConfig(epochs=args.epochs, batch=args.batch, lr=args.lr, seed=args.seed, threads=args.threads)
    try:
        model = variant_config(args.variant, hidden=args.hidden, layers=args.layers)
        data = training_data(args.data_dir, profiles)  # before reading: a collection may append meanwhile
        if args.distilled is not None:
            data["distilled"] = fingerprint(args.distilled)
        if args.stage == "experts":
            if not args.base:
                raise UsageError("--stage experts needs --base (a base checkpoint from --stage base)")
            if args.variant not in EXPERT_VARIANTS:
                raise UsageError(f"variant {args.variant} has no experts; experts: {', '.join(EXPERT_VARIANTS)}")
            base = read_config(args.base)
            by_profile = extra(base, load_examples(args.data_dir, base, profiles, min_weight=args.min_weight))
            state = train_experts(by_profile, args.base, args.out, config, model.routing, model.workload_aware, data)
        else:
            by_profile = extra(model, load_examples(args.data_dir, model, profiles, min_weight=args.min_weight))
            state = train([e for rows in by_profile.values() for e in rows], args.out, model, config, args.init, data)
    except (ValueError, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    last = state["history"][-1] if state["history"] else {}
    print(f"{args.out}: trained ({args.stage}); last {last}")
    return 0


def run_bundle(args: argparse.Namespace) -> int:
    """Ship a checkpoint only if it fits held-out records better than the uniform prior and ranks
    them by speed (``train.fit.shipping_verdict``); ``--force`` ships it anyway. Either way the
    numbers go to provenance.json."""
    from ..model.checkpoint import DEFAULT_CHECKPOINT, CheckpointError, bundle_checkpoint, load_checkpoint  # torch
    from ..train.fit import heldout_fit, shipping_verdict

    if not 0.0 <= args.prior_mix <= 1.0:
        raise UsageError(f"--prior-mix is a probability (0..1), not {args.prior_mix}")
    try:
        net, standardizer = load_checkpoint(args.checkpoint)
        fit = heldout_fit(net, standardizer, args.reference, [args.prior_mix])
    except (CheckpointError, ValueError) as err:
        raise UsageError(str(err)) from None
    passed, line = shipping_verdict(fit["summary"], args.prior_mix)
    if not passed and not args.force:
        raise UsageError(f"{args.checkpoint} is not shipped: {line}; it must fit better than the prior and rank "
                         "by speed (above 0); --force ships it anyway")  # fmt: skip
    provenance = {"date": datetime.date.today().isoformat(), "command": " ".join(["tensorgpt", *sys.argv[1:]]),
                  "note": args.note, "heldout_fit": {"reference": args.reference, "prior_mix": args.prior_mix,
                                                     "passed": passed, **fit["summary"]}}  # fmt: skip
    try:
        dest = bundle_checkpoint(args.checkpoint, args.out or DEFAULT_CHECKPOINT, provenance)
    except CheckpointError as err:
        raise UsageError(str(err)) from None
    size = (dest / "model.safetensors").stat().st_size / 2**20
    print(f"{dest}: bundled {args.checkpoint} ({size:.1f} MiB); {line}" + ("" if passed else " (forced)"))
    return 0
