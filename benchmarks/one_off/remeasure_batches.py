"""How much re-measuring the same schedules moves a run's numbers: each batch's row ratios
(report.py's ``seed_comparison``, each batch alone; for a batch of several rounds, also each round
alone, as if it had been the only one) and, between the last two batches, the per-cell
spread of the same best schedules (sd of the log ratio, share of cells moved > 5 % / 10 %, per task):

    python benchmarks/one_off/remeasure_batches.py benchmarks/results/subgraphs_zen5_avx2_b
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import read_cells  # noqa: E402
from report import load_run, seed_comparison  # noqa: E402

run = Path(sys.argv[1])
_, cells = load_run(run)
batches = sorted(run.glob("remeasured-*.jsonl"), key=lambda p: int(p.stem.split("-")[1])) + [run / "remeasured.jsonl"]
measured = [read_cells(path) for path in batches]
BASES = ("tlm-ct-retrained", "prior", "tensorgpt-retrained")


def show(label: str, batch: dict) -> None:
    rows = seed_comparison([c for c in cells if c["method"] in {k[0] for k in batch}], batch, BASES)["rows"]
    print(label)
    for method, against in rows.items():
        print(f"  {method}: " + ", ".join(f"/{b} {v['mean']:.3f}" for b, v in against.items() if b != method))


def one_round(batch: dict, index: int) -> dict:
    """The batch as if only round ``index`` had been taken: each cell's fastest schedule in it."""
    return {k: {"best_us": min((t[index] for t in row["rounds_us"] if len(t) > index), default=None)}
            for k, row in batch.items()}  # fmt: skip


for path, batch in zip(batches, measured):
    show(path.name, batch)
    rounds = min((len(t) for row in batch.values() for t in row.get("rounds_us", []) if t), default=0)
    for index in range(rounds if rounds > 1 else 0):
        show(f"  round {index + 1} alone", one_round(batch, index))
old, new = measured[-2], measured[-1]
keys = [k for k in old if k in new and old[k]["best_us"] and new[k]["best_us"]]
logs = np.log([new[k]["best_us"] / old[k]["best_us"] for k in keys])
print(f"{batches[-1].name} / {batches[-2].name}, {len(keys)} cells: geomean {np.exp(logs.mean()):.3f}, sd of log "
      f"{logs.std():.3f}, moved > 5 % {np.mean(abs(logs) > np.log(1.05)):.2f}, > 10 % {np.mean(abs(logs) > np.log(1.10)):.2f}")
for task in sorted({k[1] for k in keys}):
    mine = logs[[k[1] == task for k in keys]]
    print(f"  {task}: geomean {np.exp(mine.mean()):.3f}, sd {mine.std():.3f}")
