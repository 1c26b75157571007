"""How well a checkpoint fits held-out records, against the uniform prior it must beat.

    python benchmarks/fit.py [--checkpoint tvm_tensorgpt/model/default] [--data-dir data/reference]
        [--prior-mix 0,0.25,0.5,0.75] [--tasks A,B,...] [--out benchmarks/results/fit.json]

The measures (fit per decision token, on all records and on each task's fastest quarter, per-token
mixtures with the prior, likelihood-speed ranking) are defined in ``tvm_tensorgpt/train/fit.py``,
where ``tensorgpt bundle`` applies the shipping rule with them; this script writes them all per
task and overall to a result file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from common import RESULTS, ROOT, command_line, provenance

from tvm_tensorgpt.data.split import HELDOUT_TASKS
from tvm_tensorgpt.model import checkpoint
from tvm_tensorgpt.train.fit import FAST, heldout_fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(checkpoint.DEFAULT_CHECKPOINT))
    parser.add_argument("--data-dir", default=str(ROOT / "data" / "reference"))
    parser.add_argument("--prior-mix", default="0,0.25,0.5,0.75",
                        help="per-token mixtures with the uniform prior to score (SamplingConfig.prior_mix)")
    parser.add_argument("--tasks", help="comma-separated tasks to fit instead of the held-out ones (e.g. training "
                        "tasks: how much better it fits what it learnt from)")
    parser.add_argument("--out", default=str(RESULTS / "fit.json"))
    args = parser.parse_args()
    mixes = [float(x) for x in args.prior_mix.split(",")]
    torch.set_num_threads(1)
    net, standardizer = checkpoint.load_checkpoint(args.checkpoint)
    fit = heldout_fit(net, standardizer, args.data_dir, mixes, args.tasks.split(",") if args.tasks else HELDOUT_TASKS)
    summary = fit["summary"]
    result = provenance(command_line())
    result |= {"checkpoint": args.checkpoint, "fast_share": FAST, "summary": summary, "tasks": fit["tasks"]}
    Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"uniform prior: {summary['prior_nats_per_token']:.3f} nats/token, fastest quarter "
          f"{summary['fast_prior_nats_per_token']:.3f}")  # fmt: skip
    for key, m in summary["mix"].items():
        print(f"prior_mix {key}: model {m['model_nats_per_token']:.3f}, fastest quarter "
              f"{m['fast_model_nats_per_token']:.3f}, likelihood-speed Spearman {m['mean_likelihood_speed_spearman']:+.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
