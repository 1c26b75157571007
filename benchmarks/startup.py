"""Fixed start-up cost of one tune, each part measured in a fresh process.

    python benchmarks/startup.py [--out benchmarks/results/startup.json]

Parts: ``import tvm``; ``import tvm_tensorgpt``; first TuneContext with MetaSchedule's full tensor
intrinsic import vs with ``load_tensor_intrinsics`` (only the target's backend); one builder batch
(fresh worker processes) with the stock ``LocalBuilder`` vs the plugin's; and a whole 8-trial
``tensorgpt tune`` wall time. Run it on a quiet machine: the numbers are wall-clock.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from common import RESULTS, provenance

TARGET = '{"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2}'

SNIPPETS = {
    "import_tvm": "import tvm",
    "import_tvm_tensorgpt": "import tvm_tensorgpt",
    "context_full_intrinsics": """
import tvm_tensorgpt, tvm
from tvm.s_tir import meta_schedule as ms
from tvm_tensorgpt.workloads import get_workload
mod = get_workload("matmul-128").build()
t = time.perf_counter()
ms.TuneContext(mod=mod, target=tvm.target.Target(TARGET), space_generator="post-order-apply",
               search_strategy="replay-trace", num_threads=2)
elapsed = time.perf_counter() - t
""",
    "context_target_intrinsics": """
import tvm_tensorgpt, tvm
from tvm.s_tir import meta_schedule as ms
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics
from tvm_tensorgpt.workloads import get_workload
mod = get_workload("matmul-128").build()
t = time.perf_counter()
target = tvm.target.Target(TARGET)
load_tensor_intrinsics(target)
ms.TuneContext(mod=mod, target=target, space_generator="tensorgpt", search_strategy="tensorgpt",
               num_threads=2)
elapsed = time.perf_counter() - t
""",
    "builder_batch_stock": "BUILD:stock",
    "builder_batch_plugin": "BUILD:plugin",
}

BUILD = """
import tvm_tensorgpt, tvm
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import BuilderInput, LocalBuilder
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics
from tvm_tensorgpt.workloads import get_workload
target = tvm.target.Target(TARGET)
load_tensor_intrinsics(target)
builder = LocalBuilder(max_workers=2, timeout_sec=120) if KIND == "stock" else tvm_tensorgpt.local_builder(2, 120)
mods = [get_workload("matmul-128").build() for _ in range(2)]
t = time.perf_counter()
results = builder.build([BuilderInput(m, target) for m in mods])
elapsed = time.perf_counter() - t
assert all(r.error_msg is None for r in results), [r.error_msg for r in results]
"""


def _run(code: str) -> float:
    """Seconds for ``code`` in a fresh interpreter (its own ``elapsed`` if it sets one)."""
    program = f"import time\nTARGET = {TARGET!r}\n_t0 = time.perf_counter()\n{code}\n"
    program += "print(globals().get('elapsed', time.perf_counter() - _t0))\n"
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS / "startup.json"))
    parser.add_argument("--repeat", type=int, default=2, help="fresh processes per part (the minimum is kept)")
    args = parser.parse_args()

    results: dict[str, float] = {}
    for name, code in SNIPPETS.items():
        if code.startswith("BUILD:"):
            code = f"KIND = {code.split(':')[1]!r}\n" + BUILD
        results[name] = round(min(_run(code) for _ in range(args.repeat)), 2)
        print(f"{name:28s} {results[name]:8.2f} s", flush=True)

    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tvm_tensorgpt", "tune", "--workload", "matmul-128", "--trials", "8",
         "--per-round", "8", "--target", TARGET, "--json"],
        check=True, capture_output=True,
    )  # fmt: skip
    results["tune_8_trials_total"] = round(time.perf_counter() - start, 2)
    print(f"{'tune_8_trials_total':28s} {results['tune_8_trials_total']:8.2f} s")

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    record = provenance("python benchmarks/startup.py") | {"seconds": results}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
