"""Per benchmark row: how often its measured candidates take the largest unroll choice (512), and
how many hit the builder's timeout, from the cells' MetaSchedule work_dirs (run.py's ``--work-root``,
default the temp folder; they are not committed):

    python benchmarks/one_off/unroll_timeouts.py [/tmp]
"""

import collections
import json
import sys
from pathlib import Path

UNROLL = [0, 16, 64, 512]  # MetaSchedule's CPU unroll choices (ParallelizeVectorizeUnroll)

counts = collections.defaultdict(collections.Counter)
for work_dir in Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp").glob("bench-*"):
    row = counts[work_dir.name[len("bench-") :].rsplit("-", 1)[0]]  # bench-<method>-<random>
    records = work_dir / "database_tuning_record.json"
    if not records.exists():
        continue
    row["cells"] += 1
    for line in records.read_text().splitlines():
        insts, decisions = json.loads(line)[1][0]
        chosen = dict(decisions)
        for index, inst in enumerate(insts):
            if inst[0] == "SampleCategorical" and inst[2] and inst[2][0] == UNROLL:
                row["unroll"] += 1
                row["unroll 512"] += chosen.get(index) == UNROLL.index(512)
    for log in (work_dir / "logs").glob("*task_0*.log"):
        row["timeouts"] += log.read_text().count("LocalBuilder: Timeout")
for method, row in sorted(counts.items()):
    share = row["unroll 512"] / max(row["unroll"], 1)
    print(f"{method:22s} cells {row['cells']:4d} candidates {row['unroll']:6d} unroll 512: {share:.3f} timeouts {row['timeouts']}")
