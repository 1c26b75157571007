"""Does a generator's use on a task fall with the task's distance from what it learnt from?

    python benchmarks/one_off/transfer_by_task.py FIT.json [FIT.json ...] [--run RUN --method M] [--out F.json]

For each task of the fit files (``benchmarks/fit.py`` output): its kind, its nearest training task
(standardized workload features, ``workload_features``: the router's view of a task; distance 0
for a training task), the model's fit against uniform on the task's fastest records (``fast_share`` of them, nats per
decision token; negative = better than uniform: it puts more weight on fast schedules) alone and
mixed half and half, and the likelihood-speed rank correlation over all records; with
``--run``, the re-measured best of ``--method`` over the ``prior`` row of that run (geometric mean
over seeds). Prints one table, the means per kind (seen and unseen apart; search: geometric mean),
then the correlation of each measure with the distance over the tasks it has not learnt from;
``--out`` writes them, with the command, as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import provenance  # noqa: E402

from tvm_tensorgpt.data.split import training_tasks  # noqa: E402
from tvm_tensorgpt.train.costmodel import spearman  # noqa: E402
from tvm_tensorgpt.workloads.features import workload_features  # noqa: E402
from tvm_tensorgpt.workloads.tasks import get_task, task_kind  # noqa: E402


def _search_ratio(run: Path, method: str) -> dict[str, float]:
    """task -> geomean over seeds of the method's re-measured best over the prior row's."""
    best: dict[tuple[str, str, int], float] = {}
    for line in (run / "remeasured.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        best[(row["method"], row["task"], row["seed"])] = row["best_us"]  # later batches win
    out: dict[str, list[float]] = {}
    for (m, task, seed), us in best.items():
        if m == method and ("prior", task, seed) in best:
            out.setdefault(task, []).append(math.log(best[("prior", task, seed)] / us))
    return {task: math.exp(float(np.mean(v))) for task, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fits", nargs="+")
    parser.add_argument("--run", type=Path)
    parser.add_argument("--method", default="tensorgpt-selftrained")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    train = training_tasks()
    names = {t.name for t in train}
    features = np.stack([workload_features(t.mod) for t in train])
    mean, std = features.mean(0), features.std(0) + 1e-6
    scaled = (features - mean) / std
    ratios = _search_ratio(args.run, args.method) if args.run else {}
    rows = []
    for path in args.fits:
        for task in json.loads(Path(path).read_text(encoding="utf-8"))["tasks"]:
            mod = get_task(task["task"]).mod
            gaps = np.linalg.norm(scaled - (workload_features(mod) - mean) / std, axis=1)
            order = np.argsort(gaps)
            nearest = 0 if task["task"] in names else int(order[0])
            mix = task["mix"]
            rows.append({"task": task["task"], "kind": task_kind(mod), "seen": task["task"] in names,
                         "distance": 0.0 if task["task"] in names else float(gaps[nearest]),
                         "nearest": train[nearest].name if task["task"] not in names else task["task"],
                         "alone": mix["0.0"]["fast_model_nats_per_token"] - task["fast_prior_nats_per_token"],
                         "mixed": mix["0.5"]["fast_model_nats_per_token"] - task["fast_prior_nats_per_token"],
                         "spearman": mix["0.0"]["likelihood_speed_spearman"],
                         "search": ratios.get(task["task"])})  # fmt: skip
    rows.sort(key=lambda r: r["distance"])
    print(f"{'task':58s} {'kind':16s} {'dist':>5s} {'alone':>6s} {'mixed':>6s} {'rho':>5s} {'search':>6s}  nearest")
    for r in rows:
        search = f"{r['search']:.3f}" if r["search"] else "-"
        print(f"{r['task'][:58]:58s} {r['kind']:16s} {r['distance']:5.2f} {r['alone']:+6.3f} {r['mixed']:+6.3f} "
              f"{r['spearman']:5.2f} {search:>6s}  {r['nearest'][:50]}")  # fmt: skip
    kinds: dict[tuple[bool, str], list[dict]] = {}
    for r in rows:
        kinds.setdefault((r["seen"], r["kind"]), []).append(r)
    by_kind = []
    for (seen, kind), group in sorted(kinds.items()):
        ratios = [r["search"] for r in group if r["search"]]
        by_kind.append({"seen": seen, "kind": kind, "tasks": len(group),
                        "alone": float(np.mean([r["alone"] for r in group])),
                        "mixed": float(np.mean([r["mixed"] for r in group])),
                        "search": math.exp(float(np.mean(np.log(ratios)))) if ratios else None})  # fmt: skip
        search = f"{by_kind[-1]['search']:.3f}" if ratios else "-"
        print(f"{'seen' if seen else 'unseen'} {kind:16s} {len(group):2d} tasks: alone {by_kind[-1]['alone']:+.3f}, "
              f"mixed {by_kind[-1]['mixed']:+.3f}, search (geomean) {search}")  # fmt: skip
    unseen = [r for r in rows if not r["seen"]]
    correlations = {}
    for measure in ("alone", "mixed", "spearman", "search"):
        pairs = [(r["distance"], r[measure]) for r in unseen if r[measure] is not None]
        if len(pairs) > 2:
            correlations[measure] = spearman(*map(np.array, zip(*pairs)))
            print(f"unseen tasks: Spearman(distance, {measure}) = {correlations[measure]:+.2f} over {len(pairs)} tasks")
    if args.out:
        command = " ".join(["python benchmarks/one_off/transfer_by_task.py", *sys.argv[1:]])
        out = provenance(command) | {"rows": rows, "by_kind": by_kind, "spearman_with_distance": correlations}
        args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
