"""Do the host profiles differ when measured? Tune one task under each host profile.

    python benchmarks/host_profiles.py [--workload matmul-512] [--trials 32] [--out benchmarks/results]

Each profile gets a fresh work_dir, the same strategy and budget; its runner is pinned to the
profile's cores. Writes host_profiles.json (best latency per profile, the command, date, commit and
machine) and host_profiles.png. Resumable: profiles already in the JSON are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

from common import RESULTS, provenance

from tvm_tensorgpt.hardware import host_profiles
from tvm_tensorgpt.plugin.tune import tune_module
from tvm_tensorgpt.workloads import get_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="matmul-512")
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--strategy", default="tensorgpt")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host_profiles.json")
    results = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}
    cells = results.setdefault("profiles", {})
    for profile in host_profiles():
        if profile.name in cells:
            continue
        work_dir = tempfile.mkdtemp(prefix=f"hostprof-{profile.name}-")
        result = tune_module(get_workload(args.workload).build(), profile, work_dir, args.trials,
                             strategy=args.strategy, per_round=16, seed=args.seed)  # fmt: skip
        cells[profile.name] = {"best_us": result.best_us, "records_valid": result.records_valid,
                               "trials": result.trials, "target": profile.target}  # fmt: skip
        print(f"{profile.name:16s} best {result.best_us:10.1f} us ({result.records_valid}/{result.trials} ok)", flush=True)
        results.update(provenance(f"python benchmarks/host_profiles.py --workload {args.workload} "
                                  f"--trials {args.trials} --strategy {args.strategy} --seed {args.seed}"),
                       workload=args.workload)  # fmt: skip
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    _plot(results, os.path.join(args.out, "host_profiles.png"))


def _plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["profiles"])
    values = [results["profiles"][n]["best_us"] for n in names]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, values, color=["#888" if "sse" in n else "#c33" for n in names])
    ax.set_ylabel("best latency (us)")
    ax.set_title(f"{results['workload']}: best after the same budget, per host profile", fontsize=9)
    fig.text(0.01, 0.01, f"{results['command']} | {results['date']} | {results['commit']}", fontsize=6)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
