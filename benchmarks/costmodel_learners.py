"""Which in-tune cost model ranks best after N measurements of a task: the question behind issue #15's
"rank with a full in-tune XGB once a task has a few dozen measurements".

    python benchmarks/costmodel_learners.py [--reference data/reference/intel-xeon-native-2c]
        [--fresh data/reference_ansor64/intel-xeon-native-2c] [--records 16,32,64]
        [--out benchmarks/results/costmodel/learners_intel_native.json]

Each learner is fit per task on the task's first N records of ``--fresh`` (one tune's measurements,
in measurement order: what a tune had seen after N trials) and scores that task's records in
``--reference``; Spearman and top-5 %-in-top-10 % recall as in ``tensorgpt costmodel eval``. The
learners: MetaSchedule's XGB (warm-up lifted), the shipped model with its per-task residual as it
ships and with a larger residual, and blends of the pretrained margin with the fresh XGB whose
weight grows with the samples seen (n / (n + k)).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from common import RESULTS, ROOT, command_line, provenance
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tvm_tensorgpt.costmodel import DEFAULT_COST_MODEL, Pretrained, TensorGPTCostModel
from tvm_tensorgpt.costmodel.model import ResidualConfig
from tvm_tensorgpt.data.collect import first_measured, open_database
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.train.costmodel import evaluate, fresh_xgb, record_groups


def _standardized(x: Any) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return (x - x.mean()) / x.std() if x.std() > 0 else np.zeros_like(x)


@derived_object
class BlendCostModel(PyCostModel):
    """The pretrained margin and a fresh MetaSchedule XGB, each standardized over the scored
    candidates, the XGB weighted n / (n + k) after n measurements."""

    def __init__(self, k: float) -> None:
        self.pretrained = TensorGPTCostModel(residual=ResidualConfig(min_samples=1 << 30))  # no residual
        self.xgb = fresh_xgb()
        self.k, self.seen = k, 0

    def load(self, path: str) -> None:
        raise NotImplementedError("an offline comparison only")

    def save(self, path: str) -> None:
        raise NotImplementedError("an offline comparison only")

    def update(self, context, candidates, results) -> None:  # noqa: ANN001 - MetaSchedule's interface
        self.pretrained.update(context, candidates, results)
        self.xgb.update(context, candidates, results)
        self.seen += len(candidates)

    def predict(self, context, candidates) -> np.ndarray:  # noqa: ANN001
        margin = self.pretrained.pretrained.margin(self.pretrained.features(context, candidates))
        weight = self.seen / (self.seen + self.k)
        return (1 - weight) * _standardized(margin) + weight * _standardized(self.xgb.predict(context, candidates))


LEARNERS = {
    "fresh": fresh_xgb,
    "tuned": TensorGPTCostModel,
    "tuned100d6": lambda: TensorGPTCostModel(residual=ResidualConfig(rounds=100, max_depth=6, eta=0.2)),
    "blend16": lambda: BlendCostModel(16.0),
    "blend64": lambda: BlendCostModel(64.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=str(ROOT / "data/reference/intel-xeon-native-2c"))
    parser.add_argument("--fresh", default=str(ROOT / "data/reference_ansor64/intel-xeon-native-2c"))
    parser.add_argument("--records", default="16,32,64", help="comma-separated N: records seen per task")
    parser.add_argument("--out", default=str(RESULTS / "costmodel/learners_intel_native.json"))
    args = parser.parse_args()
    reference, fresh = Path(args.reference), Path(args.fresh)
    if reference.name != fresh.name:
        parser.error(f"--reference {reference.name} and --fresh {fresh.name} must be the same profile")
    profile, model = get_profile(reference.name), Pretrained.load(DEFAULT_COST_MODEL)
    database = open_database(reference)
    result: dict[str, Any] = provenance(command_line()) | {"learners": list(LEARNERS), "records": {}}
    for n in (int(x) for x in args.records.split(",")):
        groups = record_groups(database, profile, model.standardizer, [], fresh=first_measured(fresh, n),
                               learners=LEARNERS)  # fmt: skip
        rows = evaluate(model, groups)
        keys = [k for k in rows[0] if k.endswith(("spearman", "recall"))]
        means = {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}
        result["records"][n] = {"mean": means, "tasks": rows}
        print(n, " ".join(f"{k} {v:.3f}" for k, v in means.items()), flush=True)
        Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
