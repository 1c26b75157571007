"""``SearchStrategy.create("tensorgpt")``: a generator proposes, MetaSchedule measures.

Each round: the generator proposes decision sets for the task's sketches; each is applied to the
design-space trace and passed through the target's postprocessors; duplicates of what was already
measured (same workload, structurally equal module) are dropped; the tuning's cost model, when
there is one, ranks the survivors; the best go to the builder and runner, and their measured
latencies come back to the generator through ``observe``. Records already in the database for the
workload count as trials done, so re-running a killed tune with the same work_dir resumes it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import tvm
import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule.arg_info import ArgInfo
from tvm.s_tir.meta_schedule.profiler import Profiler
from tvm.s_tir.meta_schedule.runner import RunnerResult
from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate, PySearchStrategy, SearchStrategy

from ..language import TVM_ERRORS, Decision, Sketch
from .generator import Generator
from .space import resolved_postprocs

if TYPE_CHECKING:
    from tvm.s_tir.meta_schedule import TuneContext
    from tvm.s_tir.meta_schedule.cost_model import CostModel
    from tvm.s_tir.meta_schedule.database import Database

logger = logging.getLogger(__name__)


@dataclass
class TaskStats:
    """Where candidates of one task went: generated -> valid after postprocs -> built -> ran."""

    generated: int = 0
    valid: int = 0
    duplicates: int = 0
    measured: int = 0
    built: int = 0
    ran: int = 0
    rounds: int = 0
    resumed_records: int = 0
    generation_s: float = 0.0  # wall time inside Generator.generate


@dataclass
class TuningStats:
    """Per-task counters shared by a strategy and all its clones (one per task)."""

    tasks: dict[str, TaskStats] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def task(self, name: str) -> TaskStats:
        with self._lock:
            return self.tasks.setdefault(name, TaskStats())

    def total(self) -> TaskStats:
        out = TaskStats()
        for stats in self.tasks.values():
            for key, value in asdict(stats).items():
                setattr(out, key, getattr(out, key) + value)
        return out

    def to_json(self) -> str:
        return json.dumps({name: asdict(s) for name, s in self.tasks.items()}, indent=1)


@dataclass
class _Pending:
    sketch: Sketch
    decisions: list[Decision]


class _TaskState:
    """What one task's tuning remembers between rounds (created in ``pre_tuning``)."""

    def __init__(self, max_trials: int, per_iter: int, sketches: list[Sketch], database: Any, cost_model: Any) -> None:
        self.max_trials = max_trials
        self.per_iter = per_iter
        self.sketches = sketches
        self.database = database
        self.cost_model = cost_model
        self.trials = 0
        self.measured: set[int] = set()
        self.pending: list[_Pending] = []


def task_logger(task_name: str) -> logging.Logger:
    """The per-task logger MetaSchedule made for ``task_name`` (it writes work_dir/logs/), else ours.

    TuneContext does not expose its logger to Python; MetaSchedule names them
    ``tvm.s_tir.meta_schedule.logging.task_<i>_<name>``.
    """
    prefix = "tvm.s_tir.meta_schedule.logging.task_"
    matches = [
        name
        for name in logging.root.manager.loggerDict
        if name.startswith(prefix) and name[len(prefix):].split("_", 1)[-1] == task_name[:100]
    ]
    return logging.getLogger(matches[-1]) if matches else logger


@derived_object
class TensorGPTSearchStrategy(PySearchStrategy):
    """Search strategy driven by a ``Generator`` (the prior by default).

    Parameters
    ----------
    generator : Generator | str | None
        Proposes decision sets: a ``Generator``, "default" or None (the bundled checkpoint),
        "prior" (uniform legal decisions) or a checkpoint folder.
    oversample : int
        With a cost model, propose this many times the round size and keep the best-ranked.
    stats : TuningStats | None
        Counters shared with clones, so callers can read them after tuning.
    """

    def __init__(self, generator: Generator | str | None = None, oversample: int = 2,
                 stats: TuningStats | None = None) -> None:  # fmt: skip
        from ..model.generator import resolve_generator  # the model imports this package

        self.generator = resolve_generator(generator)
        self.oversample = max(1, int(oversample))
        self.stats = stats if stats is not None else TuningStats()
        self.context: TuneContext | None = None
        self.rng = np.random.default_rng(0)
        self.state: _TaskState | None = None
        self.task_log = logger
        self.postprocs: list = []

    def _initialize_with_tune_context(self, context: "TuneContext") -> None:
        self.context = context
        self.task_log = task_logger(str(context.task_name))
        self.postprocs = resolved_postprocs(context)
        if context.target is not None:
            self.generator.prepare(context.target)
        seed = int(context.rand_state) if context.rand_state is not None else -1
        self.rng = np.random.default_rng(seed if seed >= 0 else None)

    # --- tuning lifecycle -------------------------------------------------------------------
    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Schedule],
        database: "Database | None" = None,
        cost_model: "CostModel | None" = None,
    ) -> None:
        context = self._require_context()
        sketches = self._sketches(context, design_spaces)
        self.state = _TaskState(max_trials, num_trials_per_iter, sketches, database, cost_model)
        if database is not None:
            self._load_measured(context, database)

    def post_tuning(self) -> None:
        self.state = None

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        context, state = self._require_context(), self._require_state()
        stats = self.stats.task(context.task_name)
        if state.trials >= state.max_trials:
            return None  # None (not []) tells the task scheduler this task is finished
        size = min(state.per_iter, state.max_trials - state.trials)
        want = size * (self.oversample if state.cost_model is not None else 1)
        pool: list[tuple[MeasureCandidate, _Pending, int]] = []
        seen_now: set[int] = set()
        for _ in range(4):  # a few tries when duplicates or invalid candidates thin a round out
            started = time.perf_counter()
            with Profiler.timeit("TensorGPT/Generate"):
                proposals = self.generator.generate(state.sketches, want - len(pool), self.rng)
            stats.generation_s += time.perf_counter() - started
            with Profiler.timeit("TensorGPT/Postprocess"):
                self._validate(proposals, state, stats, pool, seen_now)
            if len(pool) >= want:
                break
        if not pool:
            self._log(logging.INFO, "TensorGPT: no new valid candidate; the search space looks exhausted")
            return None
        chosen = self._rank(context, state, pool)[:size]
        state.trials += len(chosen)
        state.measured.update(key for _, _, key in chosen)
        state.pending = [pending for _, pending, _ in chosen]
        stats.rounds += 1
        stats.measured += len(chosen)
        self._log(logging.INFO, 
            "TensorGPT round %d: generated %d, valid %d, duplicates %d, sent %d (trials %d/%d)",
            stats.rounds, stats.generated, stats.valid, stats.duplicates, len(chosen),
            state.trials, state.max_trials,
        )  # fmt: skip
        return [candidate for candidate, _, _ in chosen]

    def notify_runner_results(self, measure_candidates: list[MeasureCandidate], results: list[RunnerResult]) -> None:
        context, state = self._require_context(), self._require_state()
        stats = self.stats.task(context.task_name)
        for pending, result in zip(state.pending, results):
            error = result.error_msg
            ok = error is None and result.run_secs is not None and len(result.run_secs) > 0
            latency = float(np.mean([float(s) for s in result.run_secs])) if ok else None
            # The task scheduler passes a builder's error on as the runner result's error, prefixed
            # with the builder's name (e.g. "LocalBuilder: Timeout ..."); other errors come later.
            if error is None or "Builder" not in error.split(":", 1)[0]:
                stats.built += 1
            if ok:
                stats.ran += 1
            self.generator.observe(pending.sketch, pending.decisions, latency)
        state.pending = []
        self._log(logging.INFO, "TensorGPT: built %d, ran %d so far", stats.built, stats.ran)

    def clone(self) -> SearchStrategy:
        return TensorGPTSearchStrategy(generator=self.generator, oversample=self.oversample, stats=self.stats)

    # --- helpers ------------------------------------------------------------------------------
    def _log(self, level: int, msg: str, *args: Any) -> None:
        """To this package's logger and to the task's MetaSchedule log (work_dir/logs)."""
        logger.log(level, msg, *args)
        if self.task_log is not logger:
            self.task_log.log(level, msg, *args)

    def _require_context(self) -> "TuneContext":
        if self.context is None:
            raise RuntimeError("TensorGPTSearchStrategy used before a TuneContext initialised it")
        return self.context

    def _require_state(self) -> _TaskState:
        if self.state is None:
            raise RuntimeError("TensorGPTSearchStrategy: pre_tuning was not called")
        return self.state

    def _sketches(self, context: "TuneContext", design_spaces: Sequence[Schedule]) -> list[Sketch]:
        sketches = []
        for space in design_spaces:
            try:
                sketches.append(Sketch.from_schedule(context.mod, space))
            except TVM_ERRORS as err:
                self._log(logging.WARNING, "TensorGPT: skipping a design space it cannot analyse: %s", err)
        if not sketches:
            self._log(logging.WARNING, 
                "TensorGPT: the space generator gave no usable design space for task %s; falling back "
                "to the prior on the unscheduled workload",
                context.task_name,
            )
            sketches.append(Sketch.from_schedule(context.mod, Schedule(context.mod)))
        return sketches

    def _load_measured(self, context: "TuneContext", database: "Database") -> None:
        """Remember modules already measured for this workload (resume, no re-measuring)."""
        state, stats = self._require_state(), self.stats.task(context.task_name)
        if not database.has_workload(context.mod):
            return
        workload = database.commit_workload(context.mod)
        for record in database.get_all_tuning_records():
            if not tvm_ffi.structural_equal(record.workload.mod, workload.mod):
                continue
            sch = Schedule(context.mod, debug_mask="none", error_render_level="none")
            try:
                record.trace.apply_to_schedule(sch, remove_postproc=False)
            except TVM_ERRORS:
                continue
            state.measured.add(int(tvm_ffi.structural_hash(sch.mod)))
        state.trials = min(len(state.measured), state.max_trials)
        stats.resumed_records = len(state.measured)
        if state.measured:
            self._log(logging.INFO, "TensorGPT: resuming, %d records already in the database", len(state.measured))

    def _seed(self) -> int:
        return int(self.rng.integers(1, 2**31 - 1))  # TVM accepts 1 .. 2^31-1 only

    def _realise(self, sketch: Sketch, decisions: list[Decision], seed: int) -> Schedule | None:
        """Apply decisions and run the postprocessors; None when TVM rejects the result."""
        try:
            sch = sketch.apply(decisions, seed=seed)
            sch.enter_postproc()
            for postproc in self.postprocs:
                if not postproc.apply(sch):
                    return None
        except TVM_ERRORS:
            return None
        return sch

    def _validate(self, proposals: list, state: _TaskState, stats: TaskStats, pool: list, seen_now: set[int]) -> None:
        """Apply each proposal to its sketch and the postprocessors; keep new valid schedules."""
        for proposal in proposals:
            stats.generated += 1
            sketch = state.sketches[proposal.sketch_index]
            sch = self._realise(sketch, proposal.decisions, self._seed())
            if sch is None:
                continue
            stats.valid += 1
            key = int(tvm_ffi.structural_hash(sch.mod))
            if key in state.measured or key in seen_now:
                stats.duplicates += 1
                continue
            seen_now.add(key)
            candidate = MeasureCandidate(sch, ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
            pool.append((candidate, _Pending(sketch, proposal.decisions), key))

    @staticmethod
    def _rank(context: "TuneContext", state: _TaskState, pool: list) -> list:
        if state.cost_model is None or len(pool) <= 1:
            return pool
        with Profiler.timeit("TensorGPT/CostModel"):
            scores = np.asarray(state.cost_model.predict(context, [c for c, _, _ in pool]), dtype=float)
        order = np.argsort(-scores, kind="stable")
        return [pool[i] for i in order]
