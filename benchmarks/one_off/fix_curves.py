"""One-off, run once on 2026-12-02 from the repo root (the cells' work_dirs were /tmp/bench-*): recompute the curves of benchmarks/results/run/results.jsonl from the cells' work_dirs
(measurement order) after fixing run._curve, which had read records in latency order."""
import glob, json, re, sys
sys.path.insert(0, "benchmarks")  # noqa: E402 (run from the repo root)
from tvm.s_tir import meta_schedule as ms
from run import _curve
from tvm_tensorgpt.workloads.tasks import get_task
rows = [json.loads(l) for l in open("benchmarks/results/run/results.jsonl")]
dirs = {}
for d in glob.glob("/tmp/bench-*"):
    try:
        line = open(d + "/database_workload.json").readline()
    except OSError:
        continue
    dirs[d] = line
for row in rows:
    task = get_task(row["task"]).mod
    cands = [d for d in dirs if re.fullmatch(rf"/tmp/bench-{re.escape(row['method'])}-[a-z0-9_]{{8}}", d)]
    found = []
    for d in cands:
        db = ms.database.JSONDatabase(work_dir=d, module_equality="structural")
        if db.has_workload(task) and len(db.get_all_tuning_records()) == row["trials"]:
            found.append(d)
    assert len(found) == 1, (row["method"], row["task"], found)
    curve, ran = _curve(found[0], row["trials"])
    assert min(c for c in curve if c) == row["best_us"] or abs(min(c for c in curve if c) - row["best_us"]) < 1e-6
    row["curve_us"], row["best_us"] = curve, curve[-1]
    row["extra"]["work_dir"] = found[0]
    print(row["method"], row["task"][:30], [round(x) for x in curve[::8]])
with open("benchmarks/results/run/results.jsonl", "w") as f:
    for row in rows:
        f.write(json.dumps(row) + "\n")
