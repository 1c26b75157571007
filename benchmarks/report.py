"""docs/results.md and its plots, regenerated from the harness's result files.

    python benchmarks/report.py [--run benchmarks/results/subgraphs] [--reference-run
        benchmarks/results/ansor1000] [--gemm benchmarks/results/gemm]
        [--networks 'benchmarks/results/networks*'] [--out docs/results.md] [--img docs/img]

Normalized performance of a method on a task = reference latency ÷ the method's best latency
(1.0 = as fast as the reference, higher is faster). The reference is Ansor@1000 (MetaSchedule
evolutionary + XGBoost, 1000 trials, the same harness: ``run.py --methods ansor --trials 1000``)
where that run finished the task; otherwise the best latency any method reached on the task in
this run. Tables report geometric means over tasks; the ablation table (the seed's form) uses only
the tasks that have Ansor@1000. Validity = valid after postprocessing ÷ generated, and ran ÷
trials (Ansor proposes only postprocessed schedules, so only the second applies to it).

With several seeds, or once ``remeasure.py`` has measured every cell's best schedules again in one
batch, a section compares each row with Ansor and TLM-CT at the run's budget: the ratio per task
and seed, its geometric mean over tasks per seed, the mean over seeds, the seeds' spread and a
bootstrap interval over tasks; on the re-measured latencies where they exist.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, read_cells
from remeasure import read_remeasured

ROWS = {"ansor@1000": "Ansor@1000", "ansor": "Ansor", "ansor-cm": "Ansor + TensorGPT cost model",
        "prior": "Prior (same search)", "tlm": "TLM", "tlm-ct": "TLM-CT", "tensorgpt": "TensorGPT",
        "tensorgpt-mix": "TensorGPT, prior per token", "tensorgpt-retrained": "TensorGPT (retrained)",
        "tensorgpt-selftrained": "TensorGPT (self-trained)",
        "tensorgpt-pool256": "TensorGPT, fixed pool of 256", "tensorgpt-share10": "TensorGPT, search <= 10 % of time",
        "tensorgpt-pool512": "TensorGPT, pools of 512", "tensorgpt-pool128": "TensorGPT, pools of 128",
        "tensorgpt-carry75": "TensorGPT, pools of 256, 3/4 carried",
        "tensorgpt-carry88": "TensorGPT, pools of 256, 7/8 carried",
        "tensorgpt-first128": "TensorGPT, pools of 256, 3/4 carried, first 128",
        "tensorgpt-first128-carry88": "TensorGPT, pools of 256, 7/8 carried, first 128",
        "tensorgpt-adapt4": "TensorGPT, adapting (4 steps/round)",
        "tensorgpt-grown": "TensorGPT (grown records)", "tensorgpt-grown-choice": "TensorGPT (grown), expert choice",
        "tlm-ct-retrained": "TLM-CT (retrained)",
        "tensorgpt-distilled": "TensorGPT base + cost-model distillation",
        "no-hg": "w/o HG", "no-routing": "w/o Routing", "no-wa": "w/o WA"}  # fmt: skip
REFERENCE_TRIALS = 1000  # Ansor@1000: the seed's reference
# what the search issue's target compares TensorGPT with (TLM-CT also as retrained on the same
# records as a retrained TensorGPT), the uniform prior in the same loop (what a generator adds), and
# the fixed pool of 256 (what sizing the pool to the search's time share costs), the default
# carried pools (what other pool settings cost or save), the grown
# checkpoint with its router's mix (what choosing the experts from measurements adds)
BASELINES = ("ansor", "tlm-ct", "tlm-ct-retrained", "prior", "tensorgpt-pool256", "tensorgpt-carry75", "tensorgpt-grown")
BOOTSTRAP_DRAWS = 2000


def load_run(folder: Path) -> tuple[dict, list[dict]]:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    return meta, list(read_cells(folder / "results.jsonl").values())


def reference_cells(folder: Path, profile: str | None = None) -> dict[str, dict]:
    """Ansor@1000 cells per task from a reference run of the harness. A cell is written when its search
    ends: after 1000 trials, or earlier when the task has fewer distinct schedules (a short curve).
    A reference measured on another profile than ``profile`` (the run's) is left out: latencies of
    two devices do not compare."""
    meta = folder / "meta.json"
    measured_on = json.loads(meta.read_text(encoding="utf-8")).get("profile") if meta.exists() else None
    if profile is not None and measured_on not in (None, profile):
        print(f"report: the Ansor@1000 reference {folder} measured {measured_on}, this run {profile}: "
              "no normalisation to it", file=sys.stderr)  # fmt: skip
        return {}
    cells = read_cells(folder / "results.jsonl").values()
    return {c["task"]: c for c in cells if c["method"] == "ansor" and c["trials"] >= REFERENCE_TRIALS}


def trials_to_reach(curve: list[float | None], latency: float) -> int | None:
    """The first trial count whose best-so-far latency is at most ``latency`` (None: never)."""
    return next((i + 1 for i, v in enumerate(curve) if v is not None and v <= latency), None)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _best_at(cell: dict, budget: int) -> float | None:
    """Best latency after ``budget`` trials; a curve shorter than the budget ended because the search
    ran out of distinct candidates (e.g. an elementwise task with one schedule), so its last value holds."""
    curve = cell["curve_us"][:budget]
    return curve[-1] if curve else None


def _method_row(mine: list[dict], ref: dict[str, float | None], budgets: list[int]) -> dict:
    """Normalized performance geomean per budget (None unless every cell has it), validity, time."""
    row: dict = {"tasks": len(mine), "normalized": {}}
    for budget in budgets:
        ratios = [ref[c["task"]] / b for c in mine if (b := _best_at(c, budget)) and ref.get(c["task"])]
        row["normalized"][budget] = _geomean(ratios) if mine and len(ratios) == len(mine) else None
    generated = sum(c["generated"] or 0 for c in mine)
    row["valid_rate"] = sum(c["valid"] or 0 for c in mine) / generated if generated else None
    row["ran_rate"] = sum(c["ran"] for c in mine) / max(1, sum(c["trials"] for c in mine))
    row["correct"] = sum(1 for c in mine if c["correct"]) / max(1, len(mine))
    row["time_s"] = {k: sum(c["time_s"].get(k, 0.0) for c in mine) for k in ("generation", "cost_model", "build", "run", "wall")}
    return row


def summarise(cells: list[dict], reference: dict[str, dict], budgets: list[int]) -> dict:
    """Per method over all tasks (reference: Ansor@1000, else the best any method reached); the
    ablation rows over the tasks that have Ansor@1000; the trials Ansor@1000's own curve needs to
    reach each method's best at the full budget."""
    tasks = sorted({c["task"] for c in cells})
    best_any = {t: min((c["best_us"] for c in cells if c["task"] == t and c["best_us"]), default=None) for t in tasks}
    ref = {t: reference[t]["best_us"] if t in reference else best_any[t] for t in tasks}
    methods = list(dict.fromkeys(c["method"] for c in cells))
    out = {m: _method_row([c for c in cells if c["method"] == m], ref, budgets) for m in methods}
    covered = [t for t in tasks if t in reference]
    ablation = {"ansor@1000": _method_row([reference[t] for t in covered], ref, [])}
    ablation["ansor@1000"]["normalized"] = dict.fromkeys(budgets, 1.0 if covered else None)  # by definition
    for m in methods:
        ablation[m] = _method_row([c for c in cells if c["method"] == m and c["task"] in covered], ref, budgets)
    first = min((c["seed"] for c in cells), default=None)
    to_match = {m: {c["task"]: trials_to_reach(reference[c["task"]]["curve_us"], c["best_us"])
                    for c in cells if c["method"] == m and c["task"] in covered and c["best_us"] and c["seed"] == first}
                for m in methods}  # fmt: skip
    return {"methods": out, "ablation": ablation, "reference_from_ansor1000": covered, "tasks": tasks,
            "reference_us": {t: reference[t]["best_us"] for t in covered},
            "ansor1000_trials_to_match": to_match}  # fmt: skip


def seed_comparison(cells: list[dict], remeasured: dict[tuple[str, str, int], dict],
                    baselines: tuple[str, ...] = BASELINES) -> dict:  # fmt: skip
    """Each method against each baseline: per seed, the geometric mean over tasks of baseline
    latency ÷ method latency (> 1: the method is faster); their mean, the seeds' spread, and a 95 %
    bootstrap interval of that mean over tasks (the same resample for every seed). Latencies are the
    re-measured ones where every cell has one, else those logged while tuning."""
    source = "re-measured" if cells and all((c["method"], c["task"], c["seed"]) in remeasured for c in cells) else "tuned"
    value = {(c["method"], c["task"], c["seed"]): (remeasured[(c["method"], c["task"], c["seed"])]["best_us"]
                                                   if source == "re-measured" else c["best_us"]) for c in cells}  # fmt: skip
    seeds = sorted({c["seed"] for c in cells})
    methods = list(dict.fromkeys(c["method"] for c in cells))
    rng = np.random.default_rng(0)
    out: dict = {"source": source, "seeds": seeds, "rows": {}}
    for base in (b for b in baselines if b in methods):
        for method in methods:
            # the seeds both rows ran (a row added to a run later may have fewer: compared on those)
            both = [s for s in seeds if all(any(k == m and s == z for m, _, z in value) for k in (method, base))]
            tasks = sorted({t for m, t, _ in value if m == method
                            and all(value.get((k, t, s)) for k in (method, base) for s in both)})  # fmt: skip
            if not tasks or not both:
                continue
            logs = np.log([[value[(base, t, s)] / value[(method, t, s)] for s in both] for t in tasks])  # task x seed
            per_seed = np.exp(logs.mean(axis=0))
            draws = rng.integers(0, len(tasks), size=(BOOTSTRAP_DRAWS, len(tasks)))
            means = np.exp(logs[draws].mean(axis=1)).mean(axis=1)  # draw x seed -> mean over seeds
            out["rows"].setdefault(method, {})[base] = {
                "mean": float(per_seed.mean()), "per_seed": dict(zip(both, map(float, per_seed))),
                "ci95": [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))], "tasks": len(tasks)}  # fmt: skip
    return out


def _seed_section(comparison: dict, trials: int) -> list[str]:
    bases = [b for b in BASELINES if any(b in row for row in comparison["rows"].values())]
    if not bases:
        return []
    seeds = comparison["seeds"]
    source = ("each cell's best schedules re-measured together by `benchmarks/remeasure.py`"
              if comparison["source"] == "re-measured" else "the latencies logged while tuning (not re-measured)")  # fmt: skip
    names = " and ".join(ROWS.get(b, b) for b in bases)
    lines = ["", f"**Against {names} at {trials} trials, seeds {', '.join(map(str, seeds))}.** Baseline latency "
             "÷ method latency (> 1: faster than the baseline), geometric mean over tasks per seed, then the mean "
             f"over seeds (a row with fewer seeds than the run: over the seeds it has); the seeds' lowest and "
             f"highest; 95 % bootstrap interval over tasks ({BOOTSTRAP_DRAWS} "
             f"draws). Latencies: {source}.", "",
             "| method | " + " | ".join(f"vs {ROWS.get(b, b)}@{trials} | seeds | 95 % interval" for b in bases) + " |",
             "|---|" + "---|---|---|" * len(bases)]  # fmt: skip
    for method, row in comparison["rows"].items():
        cells = []
        for base in bases:
            r = row.get(base)
            cells += ([_fmt(r["mean"]), f"{_fmt(min(r['per_seed'].values()))}-{_fmt(max(r['per_seed'].values()))}",
                       f"{_fmt(r['ci95'][0])}-{_fmt(r['ci95'][1])}"] if r else ["n/a"] * 3)  # fmt: skip
        lines.append(f"| {ROWS.get(method, method)} | " + " | ".join(cells) + " |")
    return lines


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _norm_table(rows: dict[str, dict], budgets: list[int]) -> list[str]:
    """Markdown rows: normalized performance per budget, validity, ran / trials, correct outputs."""
    lines = ["| method | " + " | ".join(f"@{b}" for b in budgets) + " | valid after postproc | ran / trials | best output correct |",
             "|" + "---|" * (4 + len(budgets))]  # fmt: skip
    for method, row in rows.items():
        norm = " | ".join(_fmt(row["normalized"].get(b)) for b in budgets)
        valid = "n/a (postprocessed by construction)" if row["valid_rate"] is None else f"{100 * row['valid_rate']:.1f} %"
        lines.append(f"| {ROWS.get(method, method)} | {norm} | {valid} | {100 * row['ran_rate']:.1f} % | "
                     f"{100 * row['correct']:.0f} % |")  # fmt: skip
    return lines


def _seeds(meta: dict) -> str:
    """The run's seeds (meta.json of runs before ``--seeds`` holds one ``seed``)."""
    return ", ".join(map(str, meta.get("seeds", [meta.get("seed")])))


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _origins(cells: list[dict]) -> list[str]:
    """Which part of the search the measured candidates and each cell's best came from (the
    strategy's ``TaskStats.measured_from``/``best_from``; cells tuned before it count nothing)."""
    by_method: dict[str, list[dict]] = {}
    for c in cells:
        if c.get("extra", {}).get("measured_from"):
            by_method.setdefault(c["method"], []).append(c["extra"])
    if not by_method:
        return []
    origins = sorted({o for rows in by_method.values() for e in rows for o in e["measured_from"]})
    lines = ["", "Where the TensorGPT strategy's measured candidates came from: the share of each row's "
             "measurements proposed by each part of the search (the generator's model, the uniform prior "
             "mixed into its pools, or refinement of the best measured: \"refined from X\" where the "
             "chain of refinements started from X's proposal, plain \"refined\" in cells tuned before "
             "the strategy traced that), and in how many cells the best schedule came from it.", "",
             "| method | cells | " + " | ".join(f"{o}: measured / best" for o in origins) + " |",
             "|---|---|" + "---|" * len(origins)]  # fmt: skip
    for method, rows in by_method.items():
        total = sum(sum(e["measured_from"].values()) for e in rows)
        shares = [f"{sum(e['measured_from'].get(o, 0) for e in rows) / total:.2f} / "
                  f"{sum(e.get('best_from', {}).get(o, 0) for e in rows)}" for o in origins]  # fmt: skip
        lines.append(f"| {ROWS.get(method, method)} | {len(rows)} | " + " | ".join(shares) + " |")
    return lines


def _plots(cells: list[dict], reference: dict[str, dict], meta: dict, img: Path) -> list[str]:
    """Latency-vs-trials per task (Ansor@1000 dashed, log trials axis when present) and validity bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    stamp = f"{meta['command']} | {meta['profile']} | {meta['date']} | {meta['commit']}"
    tasks = sorted({c["task"] for c in cells})
    cols = min(4, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        series = [(c, {}) for c in cells if c["task"] == task]
        series += [({**reference[task], "method": "ansor@1000"}, {"color": "k", "linestyle": "--"})] if task in reference else []
        for c, style in series:
            if any(v is not None for v in c["curve_us"]):
                xs = [i + 1 for i, v in enumerate(c["curve_us"]) if v is not None]
                ax.plot(xs, [v for v in c["curve_us"] if v is not None], label=ROWS.get(c["method"], c["method"]), **style)
        if task in reference:
            ax.set_xscale("log")
        ax.set_title(task.split("/")[-1][:34], fontsize=7)
        ax.set_xlabel("trials", fontsize=7)
        ax.set_ylabel("best latency (us)", fontsize=7)
        ax.set_yscale("log")
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6)
    fig.text(0.01, 0.005, stamp, fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    curves = img / "results_curves.png"
    fig.savefig(curves, dpi=100)
    plt.close(fig)

    methods = list(dict.fromkeys(c["method"] for c in cells if c["generated"]))
    fig, ax = plt.subplots(figsize=(6, 3))
    rates = []
    for m in methods:
        mine = [c for c in cells if c["method"] == m]
        rates.append(100 * sum(c["valid"] for c in mine) / max(1, sum(c["generated"] for c in mine)))
    ax.bar([ROWS.get(m, m) for m in methods], rates, color="#36c")
    ax.set_ylabel("valid after postprocessing (%)")
    ax.set_ylim(0, 105)
    ax.tick_params(labelsize=7)
    fig.text(0.01, 0.01, stamp, fontsize=5)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    validity = img / "results_validity.png"
    fig.savefig(validity, dpi=100)
    plt.close(fig)
    return [curves.name, validity.name]


def _losses(cells: list[dict], tasks: list[str]) -> list[str]:
    """Where TensorGPT is slower than a baseline (Ansor, TLM, TLM-CT) at the full budget (nothing
    to say in a run without TensorGPT or those baselines)."""
    methods = {c["method"] for c in cells}
    if "tensorgpt" not in methods or not methods & {"ansor", "tlm", "tlm-ct"}:
        return []
    by_cell: dict[tuple[str, str], list[float]] = {}
    for c in cells:
        by_cell.setdefault((c["method"], c["task"]), []).append(c["best_us"])
    best = {key: _geomean(values) for key, values in by_cell.items()}  # over seeds
    out = []
    for task in tasks:
        ours = best.get(("tensorgpt", task))
        if ours is None:
            continue
        faster = [f"{ROWS[m]} {ours / b:.2f}x faster" for m in ("ansor", "tlm", "tlm-ct")
                  if (b := best.get((m, task))) and b < ours]  # fmt: skip
        if faster:
            out.append(f"- {task}: " + ", ".join(faster))
    if not out:
        return ["", "**Where TensorGPT loses:** nowhere in this run (at the full budget)."]
    return ["", "**Where TensorGPT loses** (a baseline's best latency beat TensorGPT's at the full budget):", "", *out]


def router_gates(checkpoint: Path | None = None) -> tuple[list[str], list[str], "np.ndarray"] | None:
    """(devices, experts, gates): a router's mean expert weights per known device over the held-out
    tasks, the bundled checkpoint's unless ``checkpoint`` names another; None without a router."""
    import numpy as np
    import torch

    from tvm_tensorgpt.data.split import heldout_tasks
    from tvm_tensorgpt.hardware import all_profiles
    from tvm_tensorgpt.model.checkpoint import DEFAULT_CHECKPOINT, has_default_checkpoint, load_checkpoint
    from tvm_tensorgpt.workloads.features import workload_features

    if checkpoint is None and not has_default_checkpoint():
        return None
    net, standardizer = load_checkpoint(checkpoint or DEFAULT_CHECKPOINT)
    if net.router is None:
        return None
    features = torch.tensor(np.stack([workload_features(t.mod) for t in heldout_tasks()]))
    devices = list(all_profiles())
    gates = []
    with torch.no_grad():
        for device in devices:
            hardware = torch.tensor(standardizer(device), dtype=torch.float32).expand(len(features), -1)
            gates.append(net.gates(hardware, features, len(features)).mean(0).numpy())
    return [d.name for d in devices], list(net.config.experts), np.array(gates)


def router_plot(img: Path, stamp: str, checkpoint: Path | None = None, filename: str = "results_router.png",
                found: tuple | None = None) -> str | None:  # fmt: skip
    """The router's expert weights per device (``router_gates``, or ``found`` when already computed)
    as stacked bars: whether the experts are used per machine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    found = found or router_gates(checkpoint)
    if found is None:
        return None
    devices, experts, gates = found
    fig, ax = plt.subplots(figsize=(max(7, 0.3 * len(devices)), 3.2))
    bottom = np.zeros(len(devices))
    for i, name in enumerate(experts):
        ax.bar(devices, gates[:, i], bottom=bottom, label=f"expert {name}")
        bottom += gates[:, i]
    ax.bar(devices, 1 - bottom, bottom=bottom, label="base channel", color="#ccc")
    ax.set_ylabel("router weight (mean over held-out tasks)", fontsize=7)
    ax.tick_params(labelsize=6)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.text(0.01, 0.01, f"{'bundled checkpoint' if checkpoint is None else checkpoint.name} | {stamp}", fontsize=5)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path = img / filename
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def gemm_section(meta: dict, cells: list[dict]) -> str:
    """The roofline line: each method's best 512^3 fp32 matmul beside numpy's sgemm and the peak."""
    flop = 2 * 512**3
    lines = ["", "## GEMM roofline (512³ fp32 matmul)", "",
             f"`{meta['command']}` — profile `{meta['profile']}`, {meta['date']}, commit {meta['commit']}, "
             f"{meta['trials']} trials per method. numpy sgemm measured in the same run: "
             f"**{meta.get('numpy_sgemm_gflops')} GFLOP/s**; the profile's nominal FP32 peak: "
             f"**{meta.get('peak_gflops')} GFLOP/s** (cores × clock × SIMD lanes × 2 × FMA pipes, docs/hardware.md). numpy is not held to the "
             "profile's ISA: it uses whatever the machine has (AVX-512 on this VM), so it can exceed the profile's peak.",
             "", "| method | best (us) | GFLOP/s | % of numpy | % of peak |", "|---|---|---|---|---|"]  # fmt: skip
    for c in cells:
        if not c["best_us"]:
            continue
        gflops = flop / (c["best_us"] * 1e-6) / 1e9
        numpy_share = 100 * gflops / meta["numpy_sgemm_gflops"] if meta.get("numpy_sgemm_gflops") else None
        peak_share = 100 * gflops / meta["peak_gflops"] if meta.get("peak_gflops") else None
        lines.append(f"| {ROWS.get(c['method'], c['method'])} | {c['best_us']:.1f} | {gflops:.1f} | "
                     f"{_fmt(numpy_share, 1)} | {_fmt(peak_share, 1)} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def networks_section(runs: list[tuple[dict, list[dict]]], image: str | None) -> str:
    """End to end: each tuned network built through relax beside its untuned build and PyTorch
    eager, one row per (network, budget, method) over every networks run."""
    lines = ["", "## End to end (whole networks through relax)", "",
             "Each run below: `run.py --suite networks` at one budget (trials per network, shared by all its "
             "tasks). Latencies are the median of the relax VM (ms); PyTorch eager runs on the profile's cores; "
             "\"kernels\" = measured + predicted (TensorGPT gives every kernel the budget does not reach the "
             "cost model's best of a generated pool; Ansor leaves it TVM's default loops); \"output\" is "
             "whether the tuned build computes what PyTorch computes (rtol 1e-2); wall = the whole cell "
             "(import, tuning, prediction, compile, timing).", ""]  # fmt: skip
    for meta, _ in runs:
        lines.append(f"- `{meta['command']}` — profile `{meta['profile']}`, {meta['machine']['cpu']}, "
                     f"{meta['date']}, commit {meta['commit']}, seeds {_seeds(meta)}")  # fmt: skip
    lines += ["", "| network | trials | method | tuned | x eager | untuned | speedup over untuned | PyTorch eager | "
              "kernels (measured + predicted / all) | wall (s) | output = PyTorch | profile |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    rows = [(c, meta) for meta, cells in runs for c in cells]
    for c, meta in sorted(rows, key=lambda r: (r[0]["task"], r[1]["profile"], r[1]["trials"], r[0]["method"])):
        e, ms_ = c["extra"], (lambda us: _fmt(us / 1000 if us else None, 1))
        speedup = e["untuned_us"] / c["best_us"] if c["best_us"] and e.get("untuned_us") else None
        vs_eager = c["best_us"] / e["eager_us"] if c["best_us"] and e.get("eager_us") else None
        kernels = (f"{e['kernels_measured']} + {e['kernels_predicted']} / {e['kernels']}" if "kernels" in e
                   else f"{e.get('kernels_replaced', '-')} replaced")  # fmt: skip
        wall = (c.get("time_s") or {}).get("wall")
        lines.append(f"| {c['task']} | {meta['trials']} | {ROWS.get(c['method'], c['method'])} | {ms_(c['best_us'])} | "
                     f"{_fmt(vs_eager, 2)} | {ms_(e.get('untuned_us'))} | {_fmt(speedup, 1)} | "
                     f"{ms_(e.get('eager_us'))} | {kernels} | {_fmt(wall, 0)} | {c['correct']} | "
                     f"`{meta['profile']}` |")  # fmt: skip
    if image:
        lines += ["", f"![latency vs budget]({image})"]
    return "\n".join(lines) + "\n"


def networks_plot(runs: list[tuple[dict, list[dict]]], img: Path) -> str | None:
    """Tuned latency vs budget per network and method (the newest profile's runs), PyTorch eager
    and the untuned build as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profile = max(runs, key=lambda r: r[0]["date"])[0]["profile"]
    mine = [(meta, c) for meta, cells in runs if meta["profile"] == profile for c in cells]
    networks = sorted({c["task"] for _, c in mine})
    if not networks:
        return None
    fig, axes = plt.subplots(1, len(networks), figsize=(3.8 * len(networks), 3.2), squeeze=False)
    for ax, network in zip(axes.flat, networks):
        cells = [(meta["trials"], c) for meta, c in mine if c["task"] == network]
        for method in sorted({c["method"] for _, c in cells}):
            points = sorted((t, c["best_us"] / 1000) for t, c in cells if c["method"] == method and c["best_us"])
            ax.plot([t for t, _ in points], [v for _, v in points], marker="o", label=ROWS.get(method, method))
        extra = cells[0][1]["extra"]
        for key, label, style in (("eager_us", "PyTorch eager", "--"), ("untuned_us", "untuned", ":")):
            if extra.get(key):
                ax.axhline(extra[key] / 1000, color="k", linestyle=style, linewidth=1, label=label)
        ax.set_xscale("symlog", linthresh=16)
        ax.set_yscale("log")
        ax.set_title(network, fontsize=8)
        ax.set_xlabel("trials (whole network)", fontsize=7)
        ax.set_ylabel("latency (ms)", fontsize=7)
        ax.tick_params(labelsize=6)
    axes.flat[0].legend(fontsize=6)
    fig.text(0.01, 0.005, f"profile {profile} | run.py --suite networks", fontsize=6)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    img.mkdir(parents=True, exist_ok=True)
    path = img / "results_networks.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def render(meta: dict, cells: list[dict], summary: dict, budgets: list[int], images: list[str], img_rel: str) -> str:
    lines = ["# Results", "",
             "Regenerated by `python benchmarks/report.py` from the harness's result files; do not edit by hand.", "",
             f"**Run:** `{meta['command']}` — profile `{meta['profile']}` (target `{json.dumps(meta.get('target'))}`), "
             f"{meta['date']}, commit {meta['commit']}, {meta['machine']['cpu']} ({meta['machine']['cores']} cores). "
             f"Seeds finished: {', '.join(map(str, sorted({c.get('seed', 1) for c in cells})))} (asked: {_seeds(meta)}), "
             f"{meta['per_round']} candidates per round, {meta['trials']} trials per cell; the "
             "smaller budgets are prefixes of that run.", ""]  # fmt: skip
    lines += [f"Resumed by `{r['command']}` ({r['date']}, commit {r['commit']})." for r in meta.get("resumes", [])]
    lines += [""] if meta.get("resumes") else []
    if meta.get("quick"):
        lines += ["> **Quick run** (`--quick`: two small tasks, 4 trials, tiny checkpoints trained on the fly). "
                  "It shows the harness works, not how the methods compare.", ""]  # fmt: skip
    reference, tasks = summary["reference_from_ansor1000"], summary["tasks"]
    lines += [f"Normalized performance = reference latency ÷ method latency (higher is better). Reference: "
              f"Ansor@1000 for {len(reference)} of {len(tasks)} tasks; the best latency any method reached on "
              "the task otherwise. Geometric mean over tasks.", ""]  # fmt: skip
    lines += _norm_table(summary["methods"], budgets)
    if len(summary["seeds"]["seeds"]) > 1 or summary["seeds"]["source"] == "re-measured":
        lines += _seed_section(summary["seeds"], meta["trials"])
    if reference:
        lines += ["", f"**Ablation** (the seed's form: normalized to Ansor@1000, held-out profile `{meta['profile']}`), "
                  f"over the {len(reference)} tasks that have Ansor@1000"
                  + (" — all of them." if len(reference) == len(tasks) else
                     f" (the reference run has not finished the other {len(tasks) - len(reference)})."), ""]  # fmt: skip
        ablation = summary["ablation"]
        lines += _norm_table({m: ablation[m] for m in ROWS if m in ablation and m != "ansor"}, budgets)
    else:
        lines += ["", f"**Ablation** (normalized to Ansor@1000): left out — no Ansor@1000 run on profile "
                  f"`{meta['profile']}` (`run.py --methods ansor --trials 1000 --profile {meta['profile']}`)."]  # fmt: skip
    to_match = summary["ansor1000_trials_to_match"].get("tensorgpt", {})
    if to_match:
        needed = [n if n is not None else REFERENCE_TRIALS + 1 for n in to_match.values()]
        lines += ["", f"**Measurements.** Ansor's own 1000-trial curve reaches TensorGPT's best latency after "
                  f"{meta['trials']} trials at trial {_median(needed):g} (median over {len(needed)} tasks; "
                  f"{sum(n > REFERENCE_TRIALS for n in needed)} never within 1000). Per task in the last column below."]  # fmt: skip
    lines += ["", "Wall time per method, summed over tasks (s): generation / cost model / build / run / total.", "",
              "| method | generation | cost model | build | run | wall |", "|---|---|---|---|---|---|"]  # fmt: skip
    timed = summary["methods"] | ({"ansor@1000": summary["ablation"]["ansor@1000"]} if reference else {})
    for method, row in timed.items():
        t = row["time_s"]
        # cells measured before run._split_time's fix can carry a negative evolutionary split
        generation = "n/a" if t["generation"] < 0 else f"{t['generation']:.1f}"
        lines.append(f"| {ROWS.get(method, method)} | {generation} | {t['cost_model']:.1f} | {t['build']:.1f} | "
                     f"{t['run']:.1f} | {t['wall']:.1f} |")  # fmt: skip
    lines += _origins(cells)
    methods = summary["methods"]
    lines += ["", "Per task: best latency (us) after the full budget (geometric mean over seeds); Ansor@1000 and the "
              "trials its curve needs to reach TensorGPT's best (first seed).", "",
              "| task | " + " | ".join(ROWS.get(m, m) for m in methods) + " | Ansor@1000 | Ansor trials to TensorGPT |",
              "|---|" + "---|" * (len(methods) + 2)]  # fmt: skip
    by_cell: dict[tuple[str, str], list[float]] = {}
    for c in cells:
        by_cell.setdefault((c["method"], c["task"]), []).append(c["best_us"])
    best = {key: _geomean(values) for key, values in by_cell.items()}  # over seeds
    for task in tasks:
        values = [_fmt(best.get((m, task)), 1) for m in methods]
        needed = to_match.get(task, "n/a")
        values += [_fmt(summary["reference_us"].get(task), 1), f">{REFERENCE_TRIALS}" if needed is None else str(needed)]
        lines.append(f"| {task} | " + " | ".join(values) + " |")
    lines += _losses(cells, summary["tasks"])
    lines += [""] + [f"![{name}]({img_rel}/{name})" for name in images] + [""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=str(RESULTS / "subgraphs"))
    parser.add_argument("--reference-run", default=str(RESULTS / "ansor1000"),
                        help="the harness run of Ansor at 1000 trials (run.py --methods ansor --trials 1000)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results.md"))
    parser.add_argument("--img", default=str(ROOT / "docs" / "img"))
    parser.add_argument("--budgets", default="16,32,64")
    parser.add_argument("--gemm", default=str(RESULTS / "gemm"), help="the gemm suite's run (if present; '' for none)")
    parser.add_argument("--networks", default=str(RESULTS / "networks*"),
                        help="the networks suite's runs (a glob: one folder per budget; '' for none)")
    args = parser.parse_args()
    meta, cells = load_run(Path(args.run))
    budgets = [b for b in (int(x) for x in args.budgets.split(",")) if b <= meta["trials"]] or [meta["trials"]]
    reference = reference_cells(Path(args.reference_run), meta["profile"]) if not meta.get("quick") else {}
    summary = summarise(cells, reference, budgets) | {"seeds": seed_comparison(cells, read_remeasured(Path(args.run)))}
    images = _plots(cells, reference, meta, Path(args.img))
    router = router_plot(Path(args.img), f"{meta['date']} | {meta['commit']}") if not meta.get("quick") else None
    images += [router] if router else []
    out = Path(args.out)
    img_rel = Path(os.path.relpath(Path(args.img).resolve(), out.parent.resolve())).as_posix()
    page = render(meta, cells, summary, budgets, images, img_rel)
    if args.gemm and (Path(args.gemm) / "meta.json").exists() and Path(args.gemm).resolve() != Path(args.run).resolve():
        page += gemm_section(*load_run(Path(args.gemm)))
    networks = [load_run(p) for p in sorted(Path(args.networks).parent.glob(Path(args.networks).name))
                if (p / "results.jsonl").exists()] if args.networks else []  # fmt: skip
    if networks:
        plot = networks_plot(networks, Path(args.img))
        page += networks_section(networks, f"{img_rel}/{plot}" if plot else None)
    out.write_text(page, encoding="utf-8")
    (Path(args.run) / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(out)


if __name__ == "__main__":
    main()
