"""The plugin's own tuning paths (used by the CLI): stock MetaSchedule calls with working defaults.

They add only what a user would otherwise have to know about this machine: the builder that does
not time out, loading just the target's tensor intrinsics, one core count for the whole run, and
a summary (trials, candidate validity, best latency, wall time) at the end.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tqdm import tqdm
from tvm.ir import IRModule
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.measure_callback import MeasureCallback, PyMeasureCallback
from tvm.target import Target

from ..generators import resolve_generator
from ..hardware import HardwareProfile, this_machine
from ..hardware.runner import local_runner
from ..tvm_glue import (
    TVM_ERRORS,
    TargetError,
    TargetLike,
    device_key,
    load_tensor_intrinsics,
    local_builder,
    mean_latency,
    parse_target,
    repair_database,
    same_device,
)
from .predict import PredictedDatabase, predict_schedules
from .strategy import SearchConfig, TensorGPTSearchStrategy, TuningStats

logger = logging.getLogger(__name__)


@dataclass
class TuneResult:
    """What a tune produced; ``generated``/``valid`` count TensorGPT's candidates (0 for others)."""

    work_dir: str
    strategy: str
    target: dict[str, Any]
    profile: str | None
    trials: int
    records_valid: int
    generated: int
    valid: int
    best_us: float | None
    wall_s: float
    tasks: dict[str, float | None] = field(default_factory=dict)  # task -> best latency (us)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """One flat JSON-able dict (``tensorgpt tune --json``): the fields, ``extra`` merged in."""
        fields = {k: v for k, v in asdict(self).items() if k != "extra"}
        return {**fields, "wall_s": round(self.wall_s, 2), **self.extra}


def _resolve(where: Any) -> tuple[Target, Any, str | None]:
    """(target, runner, profile name) for a target spec or a hardware profile (name or object).

    A CPU profile's runner is pinned to its core count; a plain target uses MetaSchedule's
    LocalRunner.
    """
    if isinstance(where, HardwareProfile):
        if where.kind == "cpu" and where.machine and where.machine != this_machine().key:
            logger.warning("TensorGPT: %s is a profile of machine %s, but this machine (%s) measures it; the "
                           "proposals are grounded in %s's specs", where.name, where.machine, this_machine().key,
                           where.machine)  # fmt: skip
        target, runner, name = parse_target(where.target), local_runner(where) if where.kind == "cpu" else "local", where.name
    else:
        target, runner, name = parse_target(where), "local", None
    cores = target.attrs.get("num-cores") if target.kind.name == "llvm" else None
    if cores and int(cores) > (os.cpu_count() or 1):
        raise TargetError(f"num-cores {int(cores)} is more than this machine's {os.cpu_count()} CPUs, and the "
                         f"tuning measures here: give at most {os.cpu_count()}")  # fmt: skip
    return target, runner, name


def _cores(target: Target) -> int:
    cores = target.attrs.get("num-cores") if target.kind.name == "llvm" else None
    return int(cores) if cores else (os.cpu_count() or 1)


def _summarise(
    database: ms.database.Database, workloads: dict[str, IRModule], target: Target
) -> tuple[int, int, dict[str, float | None]]:
    """(records, records with a measured latency, best latency in us per named workload), over the
    records of these workloads on this device only: a work_dir may hold other targets' or other
    workloads' records, which say nothing about this tuning (they are logged, once)."""
    best: dict[str, float | None] = dict.fromkeys(workloads)
    total = valid = foreign = 0
    for record in database.get_all_tuning_records():
        name = next((n for n, m in workloads.items() if tvm_ffi.structural_equal(record.workload.mod, m)), None)
        if name is None or not same_device(record.target, target):
            foreign += 1
            continue
        total += 1
        if record.run_secs is None or len(record.run_secs) == 0:
            continue
        valid += 1
        latency = mean_latency(record.run_secs) * 1e6
        if best[name] is None or latency < best[name]:  # type: ignore[operator]
            best[name] = latency
    if foreign:
        logger.warning("TensorGPT: %d record(s) in the work_dir are of another workload or target (%s); they "
                       "are not counted", foreign, json.dumps(device_key(target)))  # fmt: skip
    return total, valid, best


@derived_object
class TrialProgress(PyMeasureCallback):
    """A progress bar over a tune's trials (stderr), advanced after every measured batch."""

    def __init__(self, trials: int, tasks: list[str]) -> None:
        self.tasks = tasks
        self.bar = tqdm(total=trials, desc="tuning", unit="trial", mininterval=1.0, dynamic_ncols=True)

    def apply(self, task_scheduler: Any, task_id: int, measure_candidates: list, builder_results: list,
              runner_results: list) -> None:  # fmt: skip
        self.bar.set_postfix_str(self.tasks[task_id][:40] if task_id < len(self.tasks) else "", refresh=False)
        self.bar.update(len(runner_results))

    def close(self) -> None:
        self.bar.close()


def _tune(
    where: Any,
    work_dir: str,
    trials: int,
    strategy: str,
    per_round: int,
    seed: int | None,
    workloads: dict[str, IRModule],
    run: Callable[..., ms.database.Database],
    generator: Any = None,
    cost_model: str | None = None,
    search_config: SearchConfig = SearchConfig(),
) -> tuple[TuneResult, ms.database.Database]:
    """Run ``run(**MetaSchedule keyword arguments)`` with the plugin's defaults and summarise it."""
    target, runner, profile = _resolve(where)
    load_tensor_intrinsics(target)
    repair_database(work_dir)  # a kill may have cut the last line; MetaSchedule cannot load that
    stats = TuningStats()
    search = TensorGPTSearchStrategy(generator, search_config, stats) if strategy == "tensorgpt" else strategy
    start = time.perf_counter()
    if trials > 0:
        progress = TrialProgress(trials, list(workloads))
        try:
            database = run(
                target=target,
                work_dir=work_dir,
                max_trials_global=trials,
                num_trials_per_iter=per_round,
                builder=local_builder(max_workers=_cores(target)),
                runner=runner,
                strategy=search,
                space="tensorgpt" if strategy == "tensorgpt" else "post-order-apply",
                cost_model=cost_model or default_cost_model(strategy),
                measure_callbacks=[*MeasureCallback.create("default"), progress],
                seed=seed,
            )
        finally:
            progress.close()
    else:  # nothing to measure: what the work_dir holds (a model's kernels are then predicted)
        os.makedirs(work_dir, exist_ok=True)
        database = ms.database.JSONDatabase(work_dir=work_dir)
    wall = time.perf_counter() - start
    total, valid, best = _summarise(database, workloads, target)
    totals = stats.total()
    latencies = [v for v in best.values() if v is not None]
    extra: dict[str, Any] = {"cost_model": cost_model or default_cost_model(strategy)}
    if isinstance(search, TensorGPTSearchStrategy):
        extra |= {"generator": search.generator.describe(), "generation_s": round(totals.generation_s, 3),
                  "built": totals.built, "ran": totals.ran, "duplicates": totals.duplicates,
                  "rounds": totals.rounds, "slots": totals.slots, "pooled": totals.pooled, "inexact": totals.inexact,
                  "refined": totals.refined, "measured_from": totals.measured_from,
                  "best_from": stats.best_from()}  # fmt: skip
    result = TuneResult(
        work_dir=work_dir,
        strategy=strategy,
        target=json.loads(str(target)),
        profile=profile,
        trials=total,
        records_valid=valid,
        generated=totals.generated,
        valid=totals.valid,
        best_us=min(latencies) if latencies else None,
        wall_s=wall,
        tasks=best,
        extra=extra,
    )
    return result, database


def ordered_tasks(tasks: list[Any]) -> list[Any]:
    """A model's extracted tasks, the heaviest (FLOPs x occurrences) first: MetaSchedule's task
    scheduler visits tasks in order before it follows its gradient, so a small budget reaches the
    kernels that matter most."""

    def cost(task: Any) -> float:
        try:
            return float(tvm.s_tir.analysis.estimate_tir_flops(task.dispatched[0])) * int(task.weight)
        except TVM_ERRORS:
            return 0.0

    return sorted(tasks, key=cost, reverse=True)


def spread_budget(trials: int, per_round: int, tasks: int) -> int:
    """Trials per round, lowered so that the first visit to every task fits in ``trials`` (at least
    one each, at most ``per_round``): a budget spent on a few tasks leaves the others naive."""
    return max(1, min(per_round, trials // max(1, tasks)))


def default_cost_model(strategy: str) -> str:
    """TensorGPT's search ranks with the pretrained cost model; a stock strategy keeps the stock one."""
    return "tensorgpt" if strategy == "tensorgpt" else "xgb"


def tune_module(
    mod: IRModule,
    target: TargetLike | HardwareProfile,
    work_dir: str,
    trials: int,
    strategy: str = "tensorgpt",
    per_round: int = 16,
    seed: int | None = None,
    generator: Any = None,
    cost_model: str | None = None,
    search: SearchConfig = SearchConfig(),
) -> TuneResult:
    """Tune a TIR module (one workload) with MetaSchedule's ``tune_tir``.

    ``target`` is a target spec (see ``parse_target``) or a ``HardwareProfile``; ``generator``
    (for strategy "tensorgpt") is a ``Generator``, "default" (bundled checkpoint), "prior" or a
    checkpoint folder; ``cost_model`` a MetaSchedule cost-model name (default: ``default_cost_model``);
    ``search`` how TensorGPT's rounds are made (``SearchConfig``).
    """

    def run(**kwargs: Any) -> ms.database.Database:
        return ms.tune_tir(mod, num_tuning_cores=_cores(kwargs["target"]), **kwargs)

    result, _ = _tune(target, work_dir, trials, strategy, per_round, seed, {"main": mod}, run, generator, cost_model,
                      search)  # fmt: skip
    return result


def time_executable(executable: Any, inputs: list[np.ndarray], budget_s: float = 3.0) -> float:
    """Median latency (us) of a relax executable's ``main`` on the CPU, within about ``budget_s``.

    One timed run first sizes the measurement: 3 to 20 repeats, as many as fit the budget.
    """
    device = tvm.cpu()
    vm = tvm.relax.VirtualMachine(executable, device)
    args = [tvm.runtime.tensor(x, device) for x in inputs]
    first = float(vm.time_evaluator("main", device, number=1, repeat=1)(*args).mean)
    repeat = int(min(20, max(3, budget_s / max(first, 1e-6))))
    timer = vm.time_evaluator("main", device, number=1, repeat=repeat)
    return float(np.median(timer(*args).results)) * 1e6


def tune_model(
    name: str,
    target: TargetLike | HardwareProfile,
    work_dir: str,
    trials: int,
    strategy: str = "tensorgpt",
    per_round: int = 16,
    seed: int | None = None,
    generator: Any = None,
    cost_model: str | None = None,
    export: str | None = None,
) -> TuneResult:
    """Tune a PyTorch model through relax, then compile it with the database and time it.

    ``name`` is a built-in model, a ``.pt2`` file (``torch.export.save``) or ``file.py:function``.
    ``best_us`` is the tuned model's end-to-end latency; ``extra`` has the untuned one. With
    ``export`` the tuned executable is written there as a library (``export_library``).
    """
    executable, result = _tune_relax(name, target, work_dir, trials, strategy=strategy, per_round=per_round,
                                     seed=seed, generator=generator, cost_model=cost_model)  # fmt: skip
    if export:
        executable.export_library(export)
        result.extra["library"] = export
    return result


def tune_torch(module: Any, example_inputs: Any, target: TargetLike | HardwareProfile = "host",
               work_dir: str | None = None, trials: int = 64, **options: Any) -> tuple[Any, TuneResult]:  # fmt: skip
    """For Python users: a ``torch.nn.Module`` and its example inputs in, the tuned relax executable
    out (with the ``TuneResult``). Run it with ``tvm.relax.VirtualMachine(executable, tvm.cpu())``;
    ``executable.export_library(path)`` saves it. ``options``: strategy, per_round, seed, generator,
    cost_model as in ``tune_module``; ``work_dir`` (default: a new temporary folder) resumes."""
    work_dir = work_dir or tempfile.mkdtemp(prefix="tensorgpt-")
    return _tune_relax((module, tuple(example_inputs)), target, work_dir, trials, **options)


def _tune_relax(model: Any, where: TargetLike | HardwareProfile, work_dir: str, trials: int,
                strategy: str = "tensorgpt", per_round: int = 16, seed: int | None = None, generator: Any = None,
                cost_model: str | None = None) -> tuple[Any, TuneResult]:  # fmt: skip
    """(tuned executable, result) of a model spec or an (nn.Module, example inputs) pair."""
    # torch: only for models
    from ..workloads.models import apply_database, eager_latency, import_model, prepare, run_executable

    started = time.perf_counter()
    target, _, _ = _resolve(where)
    raw, exported, example = import_model(model)
    prepared = prepare(raw, target)
    tasks = ordered_tasks(ms.relax_integration.extract_tasks(prepared, target))
    if strategy == "tensorgpt":
        generator = resolve_generator(generator)  # once: the tune and the predictions share it
    if trials > 0:
        per_round = spread_budget(trials, per_round, len(tasks))

    def run(**kwargs: Any) -> ms.database.Database:
        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            tasks, work_dir=kwargs["work_dir"], space=kwargs.pop("space"), strategy=kwargs.pop("strategy"),
            seed=kwargs.pop("seed"))  # fmt: skip
        kwargs.pop("target")
        return ms.tune.tune_tasks(tasks=contexts, task_weights=weights, **kwargs)

    workloads = {t.task_name: t.dispatched[0] for t in tasks}
    result, database = _tune(where, work_dir, trials, strategy, per_round, seed, workloads, run, generator,
                             cost_model)  # fmt: skip
    # _summarise already found each workload's best on this device: None = nothing measured
    missing = {name: mod for name, mod in workloads.items() if result.tasks.get(name) is None}
    predicted = 0
    if missing and strategy == "tensorgpt":
        predicting = time.perf_counter()
        with tqdm(total=len(missing), desc="predicting", unit="kernel", mininterval=1.0) as bar:
            predictions = predict_schedules(missing, target, generator, seed=seed, progress=lambda _: bar.update())
        database = PredictedDatabase(database, predictions)
        predicted = sum(p.trace is not None for p in predictions)
        result.extra["prediction_s"] = round(time.perf_counter() - predicting, 2)
    result.extra |= {"kernels": len(workloads), "kernels_measured": len(workloads) - len(missing),
                     "kernels_predicted": predicted}  # fmt: skip
    inputs = [x.numpy() for x in example]
    tuned_exe, replaced = apply_database(raw, target, database)
    untuned_us = time_executable(tvm.compile(prepared, target=target), inputs)
    result.best_us = time_executable(tuned_exe, inputs)
    eager_us, reference = eager_latency(exported, example, _cores(target))
    ours = run_executable(tuned_exe, example)
    matches = bool(np.allclose(ours, reference.numpy(), rtol=1e-2, atol=1e-4))
    if not matches:
        logger.error("TensorGPT: the tuned model's output differs from PyTorch's (max abs difference %.3g)",
                     float(np.max(np.abs(ours - reference.numpy()))))  # fmt: skip
    label = model if isinstance(model, str) else type(model[0]).__name__
    result.extra |= {"model": label, "untuned_us": untuned_us, "tuned_us": result.best_us, "eager_us": eager_us,
                     "matches_pytorch": matches, "kernels_replaced": replaced,
                     "tuning_s": round(result.wall_s, 2)}  # fmt: skip
    result.wall_s = time.perf_counter() - started  # the whole command: import, tune, predict, compile, time
    return tuned_exe, result
