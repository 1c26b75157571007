"""Ansor, TLM, TLM-CT, TensorGPT and its ablations in one harness.

    python benchmarks/run.py [--methods ansor,tlm,...] [--suite subgraphs|training|networks|gemm] [--tasks ...]
        [--profile amd-zen3-avx2-2c] [--trials 64] [--per-round 16] [--seeds 1,2,3]
        [--out benchmarks/results/subgraphs] [--quick] [--json]
    python benchmarks/remeasure.py --run benchmarks/results/subgraphs  # each cell's best 3, one quiet batch
    python benchmarks/run.py --methods ansor --trials 1000 --per-round 64 --out benchmarks/results/ansor1000

Every method tunes the same tasks with the same builder, runner (pinned to the profile's cores),
per-round size and seeds, each cell (method, task, seed) in a fresh work_dir. One run per cell at the
largest budget; the budgets 16/32/... are its prefixes (best latency after k trials: the curve).
Cells finished before are skipped (``results.jsonl`` is appended per cell), so a killed run
resumes. ``--quick``: two small held-out tasks, 4 trials, tiny checkpoints trained on the fly —
the smoke test of the harness, not a result. The second command is the Ansor@1000 reference that
``report.py`` normalizes to: its own run folder, TVM's default 64 candidates per round.

Methods (``METHODS``: search strategy, cost model, generator). ``ansor``: MetaSchedule's
evolutionary search + its XGBoost cost model (TVM's auto_scheduler no longer exists; this is its
successor in TVM); ``ansor-cm``: the same search with TensorGPT's pretrained cost model, which
separates the cost model's contribution from the generator's. The others are the TensorGPT
strategy with the same pretrained cost model and one generator each: ``prior`` (uniform legal
decisions), ``tensorgpt`` (the bundled checkpoint; half of each pool from the prior, per sequence),
``tensorgpt-pool256`` (the same, with every round's pool of 256 made anew: the default until
the fifteenth run), ``tensorgpt-pool512`` / ``tensorgpt-pool128`` (the same with pools of 512 /
128), ``tensorgpt-carry75`` (pools of 256, three quarters of them carried over from the last
round's unchosen best after the first round, ``SearchConfig.carry``: the default, named),
``tensorgpt-carry88`` (the same with 7/8 carried: 32 new candidates a round after the first),
``tensorgpt-first128`` / ``tensorgpt-first128-carry88`` (carry75 / carry88 with a first round's
pool of 128, ``SearchConfig.first_pool``: the pool grows back to 256 by the new ones),
``tensorgpt-share10`` (the same with each round's pool sized to keep the search within 10 % of the
tuning time, ``SearchConfig.time_share``), ``tensorgpt-adapt4`` (the same checkpoint adapting to
each task's measurements as it tunes: 4 SFT steps a round, ``AdaptConfig``), ``tensorgpt-mix``
(the same checkpoint sampled with half the prior mixed in per token instead,
``SamplingConfig.prior_mix``: it fits held-out tasks better, docs/model.md), ``tensorgpt-retrained``
(TensorGPT as ``checkpoints.py tensorgpt`` trains it under ``--checkpoints``/retrained, not the
bundled default: what a retrain on grown data is worth before it is bundled), ``tlm-ct-retrained``
(TLM-CT trained there on the same records: the fair comparison for ``tensorgpt-retrained``),
``tensorgpt-distilled`` (a base also trained on the cost model's favourite schedules, there too),
``tensorgpt-selftrained`` (the retrained recipe on those records plus one self-training round's,
under ``--checkpoints``/selftrained: what the round adds, next to ``tensorgpt-retrained``),
``tensorgpt-grown`` (the recipe on the records after the thin-kind self-training collection, under
``--checkpoints``/grown), ``tensorgpt-grown-choice`` (that checkpoint choosing its expert mix per
task from the task's 8 fastest measurements before each round, ``ExpertChoice``),
``no-hg``, ``no-routing``, ``no-wa``, and
``tlm``/``tlm-ct`` (TLM rebuilt here from its paper's description: target-string prompts, no
hardware grounding, no experts; TLM-CT trained further on the data TensorGPT uses); their
checkpoints come from ``checkpoints.py``. Only the generator differs between those rows.

Metrics per cell: the curve, best latency, validity (generated → valid after postprocessing →
built → ran; and whether the best schedule computes the same output as the untuned build), and
wall time split into generation, cost model, build and run (MetaSchedule's Profiler).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from checkpoints import checkpoint_for
from common import CHECKPOINTS, RECORDS, RESULTS, read_cells, run_meta

from tvm_tensorgpt.plugin.strategy import SearchConfig

@dataclass(frozen=True)
class Method:
    strategy: str
    cost_model: str
    checkpoint: bool = True  # its generator is a checkpoint (else the strategy's own or the prior)
    trained_as: str | None = None  # the checkpoints.py method whose checkpoint it uses (default: its name)
    prior_mix: float = 0.0  # SamplingConfig.prior_mix: the prior mixed in per token, not per sequence
    # the subfolder of --checkpoints its RECIPE checkpoints live in, each one retrain on one records
    # snapshot (every row there learnt from the same records; its own ``tensorgpt``, not the bundled
    # default); "" = RECIPE checkpoints derived from the bundled default. A quick run ignores it
    root: str = ""
    search: SearchConfig = SearchConfig()  # how TensorGPT's rounds are made (its pool, time share)
    adapt: int = 0  # AdaptConfig.steps: SFT steps per round on the task's fastest measurements (0 = off)
    choice: int = 0  # ExpertChoice.top: the expert mix chosen per task by this many fastest measurements (0 = off)


METHODS = {
    "ansor": Method("evolutionary", "xgb", checkpoint=False),
    "ansor-cm": Method("evolutionary", "tensorgpt", checkpoint=False),
    "prior": Method("tensorgpt", "tensorgpt", checkpoint=False),
    "tlm": Method("tensorgpt", "tensorgpt"),
    "tlm-ct": Method("tensorgpt", "tensorgpt"),
    "tensorgpt": Method("tensorgpt", "tensorgpt"),
    # pools made anew each round (carry=0.0: the default until the fifteenth run; in the seventh the default was share10's)
    "tensorgpt-pool256": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(carry=0.0)),
    "tensorgpt-share10": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(time_share=0.1, carry=0.0)),
    "tensorgpt-pool512": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(pool=512, carry=0.0)),
    "tensorgpt-pool128": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(pool=128, carry=0.0)),
    "tensorgpt-carry75": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(carry=0.75)),
    "tensorgpt-carry88": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(carry=0.875)),
    "tensorgpt-first128": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", search=SearchConfig(first_pool=128)),
    "tensorgpt-first128-carry88": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt",
                                         search=SearchConfig(first_pool=128, carry=0.875)),
    "tensorgpt-adapt4": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", adapt=4),
    "tensorgpt-mix": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", prior_mix=0.5),
    "tensorgpt-retrained": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", root="retrained"),
    "tlm-ct-retrained": Method("tensorgpt", "tensorgpt", trained_as="tlm-ct", root="retrained"),
    "tensorgpt-distilled": Method("tensorgpt", "tensorgpt", root="retrained"),
    "tensorgpt-selftrained": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", root="selftrained"),
    "tensorgpt-grown": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", root="grown"),
    "tensorgpt-grown-choice": Method("tensorgpt", "tensorgpt", trained_as="tensorgpt", root="grown", choice=8),
    "no-hg": Method("tensorgpt", "tensorgpt"),
    "no-routing": Method("tensorgpt", "tensorgpt"),
    "no-wa": Method("tensorgpt", "tensorgpt"),
}
SUITES = ("subgraphs", "training", "networks", "gemm")
QUICK_TASKS = ("mobilenetv2/fused_conv2d23_subtract14_divide14_multiply14_add27_tir_clip9",
               "bert/fused_softmax_broadcast_to2")  # fmt: skip


@dataclass
class Cell:
    """One (method, task) tuning run."""

    method: str
    task: str
    trials: int
    seed: int
    curve_us: list[float | None]  # best latency after each trial (None until one ran)
    best_us: float | None
    generated: int | None  # proposals (None: the method does not report them)
    valid: int | None  # after postprocessing
    built: int | None  # (None: not reported; Ansor's failures are not split into build and run)
    ran: int
    correct: bool | None  # the best schedule's output equals the untuned build's
    time_s: dict[str, float] = field(default_factory=dict)  # generation, cost_model, build, run, total
    extra: dict = field(default_factory=dict)
    # the fastest measured schedules (trace JSON as MetaSchedule stores it, latency us): what
    # remeasure.py measures again, all cells in one quiet batch
    top: list[dict] = field(default_factory=list)


SEARCH_COST_SCOPES = ("TensorGPT/CostModel", "EvoSearch/Evolve/PredictNormalizedScore")
TOP = 3  # schedules per cell kept for re-measurement


def _split_time(profile: dict[str, float]) -> dict[str, float]:
    """MetaSchedule Profiler scopes → generation / cost model / build / run seconds.

    Generation = the outermost search scopes (TVM 0.27 has no ``EvoSearch/Evolve`` scope of its
    own: Mutation, Misc and PredictNormalizedScore sit side by side under that prefix), minus the
    cost-model prediction inside the search, which counts as cost model."""
    search = [k for k in profile if k.startswith(("EvoSearch/", "TensorGPT/"))]
    outer = [k for k in search if not any(k.startswith(o + "/") for o in search)]
    predict = sum(profile.get(k, 0.0) for k in SEARCH_COST_SCOPES)
    generation = sum(profile[k] for k in outer) - predict
    return {"generation": round(generation, 3),
            "cost_model": round(predict + profile.get("MeasureCallback/UpdateCostModel", 0.0), 3),
            "build": round(profile.get("SendToBuilder", 0.0), 3),
            "run": round(profile.get("SendToRunner", 0.0) + profile.get("JoinRunnerFutures", 0.0), 3),
            "total": round(profile.get("Total", 0.0), 3)}  # fmt: skip


def _curve(work_dir: str, trials: int) -> tuple[list[float | None], int]:
    """Best latency after each trial, in measurement order. MetaSchedule's database API returns
    records sorted by latency, so this reads the JSON lines file, which it appends as it measures."""
    best, curve, ran = None, [], 0
    path = Path(work_dir) / "database_tuning_record.json"
    for line in path.read_text(encoding="utf-8").splitlines()[:trials]:
        run_secs = json.loads(line)[1][1]
        if run_secs:
            ran += 1
            latency = float(np.mean([float(s) for s in run_secs])) * 1e6
            best = latency if best is None else min(best, latency)
        curve.append(best)
    return curve, ran


def _top(work_dir: str, trials: int, count: int = TOP) -> list[dict]:
    """The ``count`` fastest measured schedules of a cell's first ``trials`` records."""
    measured = []
    for line in (Path(work_dir) / "database_tuning_record.json").read_text(encoding="utf-8").splitlines()[:trials]:
        trace, run_secs = json.loads(line)[1][:2]
        if run_secs:
            measured.append({"trace": trace, "us": float(np.mean([float(s) for s in run_secs])) * 1e6})
    return sorted(measured, key=lambda m: m["us"])[:count]


def _correct(mod, database, target) -> bool | None:
    """Does the best schedule compute what the untuned kernel computes (random inputs)?"""
    import tvm

    sch = database.query_schedule(mod, target, "main")
    if sch is None:
        return None
    func = mod["main"]
    rng = np.random.default_rng(0)
    args = []
    for buf in func.params:  # TVM 0.27: buffers are the parameters
        shape, dtype = [int(x) for x in buf.shape], str(buf.dtype)
        args.append(rng.standard_normal(shape).astype(dtype) if "float" in dtype else np.zeros(shape, dtype))
    outputs = []
    for candidate in (mod, sch.mod):
        lib = tvm.compile(candidate, target=target)
        tensors = [tvm.runtime.tensor(a.copy()) for a in args]
        lib["main"](*tensors)
        outputs.append(tensors[-1].numpy())
    return _same(outputs[0], outputs[1])


def _same(reference: np.ndarray, ours: np.ndarray, rtol: float = 1e-3) -> bool:
    """Equal up to float32 rounding of reassociated sums: the tolerance scales with the output
    (a fixed atol flagged one element in 50 176 of a conv3d whose outputs reach 1.7e5)."""
    scale = max(1.0, float(np.abs(reference).max()))
    return bool(np.allclose(reference, ours, rtol=rtol, atol=1e-5 * scale))


def _profiled(tune, *args, generator, **kwargs):
    """(tune's result, its wall time split by MetaSchedule's Profiler)."""
    from tvm.s_tir import meta_schedule as ms

    started = time.perf_counter()
    with ms.Profiler() as profiler:
        result = tune(*args, generator=str(generator) if isinstance(generator, Path) else generator, **kwargs)
    times = _split_time({k: float(v) for k, v in profiler.get().items()})
    times["wall"] = round(time.perf_counter() - started, 3)
    return result, times


def tune_cell(method: str, name: str, mod, profile, generator, trials: int, per_round: int,
              seed: int, work_dir: str) -> Cell:  # fmt: skip
    """Tune one cell; ``generator`` is a checkpoint folder, a ``Generator`` or "prior" (None for the
    evolutionary methods)."""
    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.plugin.tune import tune_module
    from tvm_tensorgpt.tvm_glue import parse_target

    strategy = METHODS[method].strategy
    result, times = _profiled(tune_module, mod, profile, work_dir, trials, strategy=strategy, per_round=per_round,
                              seed=seed, generator=generator, cost_model=METHODS[method].cost_model,
                              search=METHODS[method].search)  # fmt: skip
    database = ms.database.JSONDatabase(work_dir=work_dir, module_equality="structural")
    curve, ran = _curve(work_dir, trials)
    correct = _correct(mod, database, parse_target(profile.target))
    generating = strategy == "tensorgpt"
    return Cell(method, name, trials, seed, curve, curve[-1] if curve else None,
                result.generated if generating else None, result.valid if generating else None,
                result.extra.get("built"), ran, correct, times, {**result.extra, "work_dir": work_dir},
                _top(work_dir, trials))  # fmt: skip


def network_cell(method: str, name: str, profile, generator, trials: int, per_round: int, seed: int,
                 work_dir: str) -> Cell:  # fmt: skip
    """A whole network through relax: tuned vs untuned vs PyTorch eager latency, and whether the
    tuned build computes what PyTorch computes."""
    from tvm_tensorgpt.plugin.tune import tune_model

    strategy = METHODS[method].strategy
    result, times = _profiled(tune_model, name, profile, work_dir, trials, strategy=strategy, per_round=per_round,
                              seed=seed, generator=generator, cost_model=METHODS[method].cost_model)  # fmt: skip
    correct = result.extra["matches_pytorch"]  # tune_model checks the tuned build against PyTorch eager
    extra = dict(result.extra)
    ran = result.records_valid
    return Cell(method, name, result.trials, seed, [], result.best_us, result.generated if strategy == "tensorgpt" else None,
                result.valid if strategy == "tensorgpt" else None, result.extra.get("built"), ran, correct, times,
                extra)  # fmt: skip


def _tasks(suite: str, quick: bool) -> list[tuple[str, object]]:
    from tvm_tensorgpt.data.split import heldout_tasks, training_tasks
    from tvm_tensorgpt.workloads import get_workload
    from tvm_tensorgpt.workloads.tasks import get_task

    if suite == "gemm":
        return [("matmul-512", get_workload("matmul-512").build())]
    if suite == "networks":
        from tvm_tensorgpt.workloads.networks import NETWORKS

        return [(name, None) for name in NETWORKS]
    if quick:
        return [(name, get_task(name).mod) for name in QUICK_TASKS]
    if suite == "training":  # tasks the generators learnt from: pick some with --tasks
        return [(t.name, t.mod) for t in training_tasks()]
    return [(t.name, t.mod) for t in heldout_tasks()]


def _numpy_sgemm_gflops(n: int = 512, cores: int = 2) -> float:
    """The host's numpy sgemm on n^3, for the roofline line (same thread count as the profile)."""
    os.environ.setdefault("OMP_NUM_THREADS", str(cores))
    a, b = np.random.rand(n, n).astype("float32"), np.random.rand(n, n).astype("float32")
    a @ b
    runs = []
    for _ in range(20):
        start = time.perf_counter()
        a @ b
        runs.append(time.perf_counter() - start)
    return 2 * n**3 / float(np.median(runs)) / 1e9


def _folder(method: str, args: argparse.Namespace) -> Path | None:
    """The checkpoint folder a method tunes with (trained first where missing); None without one."""
    spec = METHODS[method]
    if not spec.checkpoint:
        return None
    root = Path(args.checkpoints) / ("" if args.quick else spec.root)
    return Path(checkpoint_for(spec.trained_as or method, root, args.data_dir, args.quick, not spec.root))


def _generator(method: str, folder: Path | None):
    """What a method's search proposes with: its checkpoint (a folder, or a generator sampling it
    with ``prior_mix``, adapting or choosing experts), the prior, or nothing (evolutionary). Made anew for each
    cell, so an adapting generator starts every cell from the checkpoint."""
    spec = METHODS[method]
    if folder is None:
        return "prior" if spec.strategy == "tensorgpt" else None
    if not spec.prior_mix and not spec.adapt and not spec.choice:
        return folder
    from tvm_tensorgpt.generators.model import AdaptConfig, ExpertChoice, ModelGenerator
    from tvm_tensorgpt.model.generate import SamplingConfig

    return ModelGenerator.from_checkpoint(folder, sampling=SamplingConfig(prior_mix=spec.prior_mix),
                                          adapt=AdaptConfig(steps=spec.adapt),
                                          choice=ExpertChoice(top=spec.choice))  # fmt: skip


def _checkpoints(folders: dict[str, Path | None]) -> dict[str, dict]:
    """Which checkpoint each generating method tunes with and the records it learnt from (``data``
    of its training.json, or of a bundle's provenance.json, with the bundle's note; None where it
    predates that), for meta.json."""
    out = {}
    for method, folder in folders.items():
        if folder is not None:
            files = [f for f in (folder / "training.json", folder / "provenance.json") if f.exists()]
            record = json.loads(files[0].read_text(encoding="utf-8")) if files else {}
            out[method] = {"folder": str(folder), "data": record.get("data")}
            out[method] |= {"note": record["note"]} if record.get("note") else {}
    return out


def _start_meta(path: Path, meta: dict) -> dict:
    """Write meta.json at the first start (so a cut run can be reported); a resume keeps the first
    start's record and appends its own to ``resumes`` (with the checkpoints of the rows it names)."""
    if path.exists():
        first = json.loads(path.read_text(encoding="utf-8"))
        first.setdefault("resumes", []).append({k: meta[k] for k in ("command", "date", "commit", "machine", "checkpoints")})
        meta = first
    path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def _profile(args: argparse.Namespace):
    """The profile to measure: this machine's held-out one by default (``HELDOUT_HOSTS``). Only this
    machine's profiles can be measured here; a quick run (a smoke test) takes its AVX2 2-core profile."""
    from tvm_tensorgpt.data.split import HELDOUT_HOST, heldout_host_of
    from tvm_tensorgpt.hardware import check_this_machine, get_profile, this_machine

    if args.profile is None:
        here = this_machine().key
        args.profile = f"{here}-avx2-2c" if args.quick else heldout_host_of(here) or HELDOUT_HOST
    profile = get_profile(args.profile)
    check_this_machine(profile, "benchmark on")
    return profile


def run(args: argparse.Namespace) -> dict:
    from tvm_tensorgpt.tvm_glue import parse_target

    profile = _profile(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.jsonl"
    done = read_cells(path)
    tasks = _tasks(args.suite, args.quick)
    if args.tasks:
        wanted = args.tasks.split(",")
        tasks = tasks[: int(wanted[0])] if wanted[0].isdigit() else [t for t in tasks if t[0] in wanted]
    # seed-major, so a cut run has whole seeds of whole tasks
    cells = [(m, name, mod, seed) for seed in args.seeds for name, mod in tasks for m in args.methods]
    todo = [c for c in cells if (c[0], c[1], c[3]) not in done]
    folders = {m: _folder(m, args) for m in args.methods}  # resolved (and trained) once, before any cell
    meta = _start_meta(out / "meta.json", run_meta(args) | {"target": json.loads(str(parse_target(profile.target))),
                                                             "checkpoints": _checkpoints(folders)})  # fmt: skip
    started = time.perf_counter()
    for index, (method, name, mod, seed) in enumerate(todo):
        checkpoint = _generator(method, folders[method])
        work_dir = tempfile.mkdtemp(prefix=f"bench-{method}-", dir=args.work_root)
        tune = network_cell if args.suite == "networks" else functools.partial(tune_cell, mod=mod)
        cell = tune(method=method, name=name, profile=profile, generator=checkpoint, trials=args.trials,
                    per_round=args.per_round, seed=seed, work_dir=work_dir)  # fmt: skip
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(cell)) + "\n")
        done[(method, name, seed)] = asdict(cell)
        elapsed = time.perf_counter() - started
        eta = elapsed / (index + 1) * (len(todo) - index - 1)
        best = f"{cell.best_us:.1f} us" if cell.best_us else "none"
        print(f"[{index + 1}/{len(todo)}] {method:10s} {name} seed {seed}: best {best}, ran {cell.ran}/{cell.trials}"
              f" (ETA {eta / 60:.0f} min)", file=sys.stderr, flush=True)  # fmt: skip
    if args.suite == "gemm":
        meta["numpy_sgemm_gflops"] = round(_numpy_sgemm_gflops(512, profile.specs.cores), 2)
        meta["peak_gflops"] = round(profile.specs.peak_gflops, 1)
        (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return {"meta": meta, "cells": [done[(m, n, seed)] for m, n, _, seed in cells]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {', '.join(METHODS)}")
    parser.add_argument("--suite", default="subgraphs", choices=SUITES)
    parser.add_argument("--profile", help="this machine's held-out host profile by default")
    parser.add_argument("--trials", type=int, default=64, help="budget per cell (its prefixes give 16, 32)")
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--seeds", default="1", help="comma-separated; every cell runs once per seed")
    parser.add_argument("--out", help="run folder (default: benchmarks/results/<suite>; with --quick a new "
                        "temporary folder, never the committed results)")
    parser.add_argument("--checkpoints", default=str(CHECKPOINTS), help="where method checkpoints live")
    parser.add_argument("--data-dir", default=str(RECORDS), help="training data (checkpoints)")
    parser.add_argument("--work-root", default=None, help="parent of the per-cell work_dirs (default: temp)")
    parser.add_argument("--tasks", help="a subset: comma-separated task names, or N for the suite's first N")
    parser.add_argument("--quick", action="store_true", help="2 small tasks, 4 trials, tiny checkpoints")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args()
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    try:
        args.seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    except ValueError:
        parser.error(f"--seeds takes comma-separated integers, e.g. 1,2,3, not {args.seeds!r}")
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown methods {unknown}; known: {', '.join(METHODS)}")
    if args.suite == "training" and not args.tasks and not args.quick:
        parser.error("--suite training is every training task (hundreds): name some with --tasks (benchmarks/one_off/seen_tasks.py "
                     "prints a list)")
    if args.quick:
        args.trials, args.per_round = min(args.trials, 4), 4
    args.out = args.out or (tempfile.mkdtemp(prefix="bench-quick-") if args.quick else str(RESULTS / args.suite))
    # stdout carries only the JSON object; MetaSchedule prints its task tables on stdout
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        results = run(args)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
