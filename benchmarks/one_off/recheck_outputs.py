"""One-off, run once on 2026-12-02 after fix_curves.py (needs the work_dirs it recorded): recompute `correct` of benchmarks/results/run/results.jsonl with the fixed tolerance."""
import json, sys
sys.path.insert(0, "benchmarks")  # noqa: E402 (run from the repo root)
from tvm.s_tir import meta_schedule as ms
from run import _correct
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.plugin.target import parse_target
from tvm_tensorgpt.workloads.tasks import get_task
target = parse_target(get_profile("host-avx2-2c").target)
rows = [json.loads(l) for l in open("benchmarks/results/run/results.jsonl")]
for row in rows:
    if row["correct"]:
        continue
    db = ms.database.JSONDatabase(work_dir=row["extra"]["work_dir"], module_equality="structural")
    row["correct"] = _correct(get_task(row["task"]).mod, db, target)
    print(row["method"], row["task"][:30], row["correct"])
with open("benchmarks/results/run/results.jsonl", "w") as f:
    for row in rows:
        f.write(json.dumps(row) + "\n")
