"""CUDA validity without a GPU: how many generated schedules a GPU would accept, per method and device.

    python benchmarks/validity.py [--profiles rtx4090,jetson-xavier,jetson-orin]
        [--methods random,tlm,masks,tensorgpt] [--tasks N] [--candidates 32] [--compile 4]
        [--out benchmarks/results/validity] [--quick] [--json]

For each GPU profile and held-out representative subgraph, each method proposes ``--candidates``
decision sets for the task's CUDA design spaces; each is counted through: applied to the sketch →
MetaSchedule's CUDA postprocessors → VerifyGPUCode with the device's limits → (the first
``--compile`` verified ones) TVM's CUDA codegen + nvcc for the device's arch. Methods: ``random``
(uniform legal decisions, no device masks), ``tlm`` (the TLM checkpoint of benchmarks/checkpoints,
no hardware grounding, no masks), ``masks`` (uniform under the device masks), ``tensorgpt`` (the
bundled checkpoint with the device masks), ``tensorgpt-gpu`` (its base with GPU experts trained on
validity labels, benchmarks/checkpoints.py, with the masks). Cells are appended to ``cells.jsonl`` (a rerun skips
finished ones) and ``docs/validity.md`` + ``docs/img/validity_gpu.png`` are regenerated.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np
from checkpoints import checkpoint_for
from common import CHECKPOINTS, RECORDS, RESULTS, ROOT, command_line, commit

PROFILES = ("rtx4090", "jetson-xavier", "jetson-orin")
METHODS = ("random", "tlm", "masks", "tensorgpt", "tensorgpt-gpu")


def generator_for(method: str, quick: bool):
    from tvm_tensorgpt.generators import PriorGenerator
    from tvm_tensorgpt.generators.model import ModelGenerator, default_generator

    if method == "random":
        return PriorGenerator(device_limits=False)
    if method == "masks":
        return PriorGenerator()
    if method == "tensorgpt":
        return default_generator()
    if method in ("tlm", "tensorgpt-gpu"):
        folder = checkpoint_for(method, CHECKPOINTS, str(RECORDS), quick)
        return ModelGenerator.from_checkpoint(folder, device_limits=method != "tlm")
    raise SystemExit(f"unknown method {method!r}; known: {', '.join(METHODS)}")


def run_cell(profile: str, method: str, task_name: str, candidates: int, compile_limit: int, seed: int,
             generator) -> dict:  # fmt: skip
    import tvm

    from tvm_tensorgpt.generators.validity import check_candidates
    from tvm_tensorgpt.hardware import get_profile
    from tvm_tensorgpt.language import design_context
    from tvm_tensorgpt.workloads.tasks import get_task

    target = tvm.target.Target(get_profile(profile).target)
    task = get_task(task_name)
    context, sketches = design_context(task.mod, target, seed)
    start = time.perf_counter()
    generator.prepare(target)
    proposals = generator.generate(sketches, candidates, np.random.default_rng(seed))
    generation = time.perf_counter() - start
    counts = check_candidates(context, sketches, proposals, compile_limit)
    return {"profile": profile, "method": method, "task": task_name, "kind": task.kind, "seed": seed,
            "generator": generator.describe(), **vars(counts), "generation_s": round(generation, 2),
            "seconds": round(time.perf_counter() - start, 2)}  # fmt: skip


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(cells: list[dict]) -> dict:
    """profile -> method -> stage -> share of generated candidates (pooled over tasks)."""
    out: dict = {}
    for cell in cells:
        row = out.setdefault(cell["profile"], {}).setdefault(cell["method"], {
            "generated": 0, "postprocessed": 0, "verified": 0, "tried": 0, "compiled": 0, "tasks": 0})
        row["tasks"] += 1
        for key in ("generated", "postprocessed", "verified"):
            row[key] += cell[key]
        if cell["compiled"] is not None:
            row["tried"] += cell["compile_tried"]
            row["compiled"] += cell["compiled"]
    for methods in out.values():
        for row in methods.values():
            row["share"] = {s: row[s] / row["generated"] for s in ("postprocessed", "verified")}
            row["share"]["compiled"] = row["compiled"] / row["tried"] if row["tried"] else None
    return out


def report(cells: list[dict], command: str, out_md: Path, out_png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarize(cells)
    made_by = commit()
    date = datetime.date.today().isoformat()
    methods = [m for m in METHODS if any(m in v for v in summary.values())]
    profiles = [p for p in PROFILES if p in summary] + sorted(set(summary) - set(PROFILES))
    fig, axes = plt.subplots(1, len(profiles), figsize=(4.2 * len(profiles), 3.6), squeeze=False)
    for ax, profile in zip(axes[0], profiles):
        x = np.arange(len(methods))
        verified = [summary[profile].get(m, {}).get("share", {}).get("verified", 0) * 100 for m in methods]
        ax.bar(x, verified, color=["#bbbbbb", "#999999", "#7fb3d5", "#1f77b4", "#2ca02c"][: len(methods)])
        for i, v in enumerate(verified):
            ax.text(i, v + 1, f"{v:.0f}", ha="center", fontsize=8)
        ax.set_xticks(x, methods)
        ax.set_ylim(0, 110)
        ax.axhline(95, ls=":", color="k", lw=0.8)
        ax.set_title(profile)
        ax.set_ylabel("% of generated passing VerifyGPUCode")
    fig.suptitle(f"CUDA validity per device (held-out subgraphs; {made_by}, {date})", fontsize=9)
    fig.tight_layout()
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=110)
    lines = [
        "# CUDA validity without a GPU",
        "",
        f"Generated by `{command}` (commit {made_by}, {date}) from `benchmarks/results/validity/cells.jsonl`;",
        "regenerate with the same command (finished cells are kept). No GPU is involved: a candidate is",
        "*postprocessed* when it applies to its sketch and passes MetaSchedule's CUDA postprocessors",
        "except VerifyGPUCode, *verified* when VerifyGPUCode accepts it for the device's limits (threads,",
        "shared memory, vthreads, the lowering itself), and *compiled* when TVM's CUDA code and nvcc for",
        "the device's arch accept it (only the first few verified candidates of each cell are compiled; the",
        "column is the share of those). Shares pool every task of the profile.",
        "",
        f"![validity]({out_png.relative_to(out_md.parent).as_posix()})",
        "",
        "| profile | method | tasks | generated | postprocessed | verified (VerifyGPUCode) | nvcc compiled |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for profile in profiles:
        for method in methods:
            row = summary[profile].get(method)
            if row is None:
                continue
            share = row["share"]
            nvcc = f"{row['compiled']}/{row['tried']}" if row["tried"] else "not run"
            lines.append(f"| {profile} | {method} | {row['tasks']} | {row['generated']} | "
                         f"{share['postprocessed']:.1%} | **{share['verified']:.1%}** | {nvcc} |")  # fmt: skip
    notes = sorted({(c["profile"], c["nvcc"]) for c in cells if c["nvcc"] and c["nvcc"] != "not asked"})
    if notes:
        lines += ["", "Where nvcc was not run:", ""] + [f"- {p}: {why}" for p, why in notes]
    failed = [c for c in cells if c["compiled"] is not None and c["compiled"] < c["compile_tried"]]
    if failed:
        lines += ["", "Where a verified candidate did not compile (TVM's CUDA build or nvcc; what it said):", ""]
        for c in failed:
            said = "; ".join(c.get("compile_errors", [])) or "not kept (cell measured before errors were recorded)"
            lines.append(f"- {c['profile']} / {c['method']} / {c['task']}: "
                         f"{c['compile_tried'] - c['compiled']} of {c['compile_tried']} — {said}")  # fmt: skip
    lines += ["", "Per task (verified share per method):", "",
              "| profile | task | kind | " + " | ".join(methods) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in methods) + " |"]  # fmt: skip
    by_task: dict = {}
    for c in cells:
        by_task.setdefault((c["profile"], c["task"], c["kind"]), {})[c["method"]] = c["verified"] / c["generated"]
    for (profile, task, kind), shares in sorted(by_task.items()):
        row = " | ".join(f"{shares[m]:.0%}" if m in shares else "" for m in methods)
        lines.append(f"| {profile} | {task} | {kind} | {row} |")
    out_md.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--methods", default=",".join(METHODS[:4]))
    parser.add_argument("--tasks", type=int, default=None, help="the first N held-out tasks (default all)")
    parser.add_argument("--candidates", type=int, default=32)
    parser.add_argument("--compile", type=int, default=4, help="verified candidates per cell sent to nvcc")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS / "validity"))
    parser.add_argument("--docs", default=str(ROOT / "docs"), help="where validity.md and img/ go ('' = no report)")
    parser.add_argument("--quick", action="store_true", help="jetson-orin, 2 tasks, 6 candidates, no tlm")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()

    from tqdm import tqdm

    from tvm_tensorgpt.data.split import heldout_tasks
    from tvm_tensorgpt.hardware import get_profile

    if args.quick:
        args.profiles, args.methods, args.tasks, args.candidates, args.compile = (
            "jetson-orin", "random,masks,tensorgpt", 2, 6, 1)  # fmt: skip
    profiles = [p for p in args.profiles.split(",") if p]
    for p in profiles:
        if get_profile(p).kind != "gpu":
            raise SystemExit(f"{p} is not a GPU profile; GPU profiles: {', '.join(PROFILES)}")
    methods = [m for m in args.methods.split(",") if m]
    tasks = [t.name for t in heldout_tasks()][: args.tasks]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cells_path = out / "cells.jsonl"
    done = {(c["profile"], c["method"], c["task"]) for c in _read(cells_path)}
    todo = [(p, m, t) for p in profiles for m in methods for t in tasks if (p, m, t) not in done]
    generators: dict = {}
    with tqdm(total=len(todo), desc="validity", unit="cell", file=sys.stderr) as bar:
        for profile, method, task in todo:
            bar.set_postfix_str(f"{profile} {method} {task[-30:]}")
            generator = generators.setdefault(method, generator_for(method, args.quick))
            cell = run_cell(profile, method, task, args.candidates, args.compile, args.seed, generator)
            with cells_path.open("a") as f:
                f.write(json.dumps(cell) + "\n")
            bar.update()
    cells = [c for c in _read(cells_path) if c["profile"] in profiles and c["method"] in methods]
    command = command_line()
    (out / "command.txt").write_text(command + "\n")
    if args.docs:
        report(cells, command, Path(args.docs) / "validity.md", Path(args.docs) / "img" / "validity_gpu.png")
    if args.json:
        print(json.dumps(summarize(cells), indent=1))


if __name__ == "__main__":
    main()
