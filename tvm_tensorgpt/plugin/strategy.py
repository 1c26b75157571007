"""``SearchStrategy.create("tensorgpt")``: the generator proposes, a warm cost model chooses, the
best measured schedules are refined.

Each round builds a pool: the generator's decision sets (spread over the sketches by what was
measured best), each applied to the design-space trace and postprocessed, plus neighbours of the
best measured schedules made by MetaSchedule's own mutators (a growing share as the budget is
spent). Duplicates of what was already measured are dropped; the tuning's cost model (with
``cost_model="tensorgpt"`` a pretrained one, warm from trial 0) ranks the pool; the best, and a
few random ones, go to the builder and runner; their latencies come back to the generator through
``observe``. Records already in the database for the workload count as trials done and seed the
refinement, so re-running a killed tune with the same work_dir resumes it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir import Schedule
from tvm.s_tir.schedule import Trace
from tvm.s_tir.meta_schedule.arg_info import ArgInfo
from tvm.s_tir.meta_schedule.profiler import Profiler
from tvm.s_tir.meta_schedule.runner import RunnerResult
from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate, PySearchStrategy, SearchStrategy

from ..generators import Generator, MixtureGenerator, PriorGenerator, Proposal, resolve_generator
from ..language import Decision, Sketch
from ..tvm_glue import TVM_ERRORS, device_key, mean_latency, mutate, resolved_mutators, resolved_postprocs, same_device

if TYPE_CHECKING:
    from tvm.s_tir.meta_schedule import TuneContext
    from tvm.s_tir.meta_schedule.cost_model import CostModel
    from tvm.s_tir.meta_schedule.database import Database

logger = logging.getLogger(__name__)

REFINED = "refined"  # the origin of a mutated measured schedule (TaskStats.measured_from)

# Set to end every TensorGPT tuning after the batch being measured (e.g. on Ctrl-C): each task's
# next round reports "finished", so MetaSchedule writes what was measured and returns normally.
STOP = threading.Event()


@dataclass
class TaskStats:
    """Where candidates of one task went: generated -> valid after postprocs -> built -> ran."""

    generated: int = 0  # proposals realised (a repeat of a decision set realised before is only a duplicate)
    valid: int = 0
    duplicates: int = 0  # repeats dropped: of a realised decision set, a measured module or one in the pool
    measured: int = 0
    built: int = 0
    ran: int = 0
    rounds: int = 0
    slots: int = 0  # pool slots the rounds made anew (SearchConfig: pool, carry, time share), summed
    pooled: int = 0  # candidates the rounds' pools held for the cost model to rank, summed
    resumed_records: int = 0
    # chosen candidates whose exact replay gave another module than the pool's module trace (see
    # ``Sketch.apply``): a location the sampler moves (a tile mutation can leave a refined child's
    # location on a loop of extent 1, which TVM skips), a seed-dependent slot
    inexact: int = 0
    generation_s: float = 0.0  # wall time inside Generator.generate
    # measured candidates per origin: the generator (a mixture's part) that proposed them ("model",
    # "prior"), or "refined from X": a mutation of a measured schedule whose chain of refinements
    # started from X's proposal (plain "refined" where it started from a resumed record), so a tune
    # shows which part of the search its measurements, and its best, trace back to
    measured_from: dict[str, int] = field(default_factory=dict)
    best_from: str = ""  # the origin of the task's fastest measured schedule ("" before one ran)

    @property
    def refined(self) -> int:
        """Measured candidates that came from refining a measured schedule."""
        return sum(n for origin, n in self.measured_from.items() if origin.startswith(REFINED))


@dataclass
class TuningStats:
    """Per-task counters shared by a strategy and all its clones (one per task)."""

    tasks: dict[str, TaskStats] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def task(self, name: str) -> TaskStats:
        with self._lock:
            return self.tasks.setdefault(name, TaskStats())

    def total(self) -> TaskStats:
        """Every counter summed over the tasks (``best_from``, one task's, stays empty: see ``best_from``)."""
        out = TaskStats()
        for stats in self.tasks.values():
            for key, value in asdict(stats).items():
                if isinstance(value, dict):
                    getattr(out, key).update({k: getattr(out, key).get(k, 0) + v for k, v in value.items()})
                elif not isinstance(value, str):
                    setattr(out, key, getattr(out, key) + value)
        return out

    def best_from(self) -> dict[str, int]:
        """How many tasks' fastest schedule came from each origin."""
        return dict(Counter(s.best_from for s in self.tasks.values() if s.best_from))

    def to_json(self) -> str:
        return json.dumps({name: asdict(s) for name, s in self.tasks.items()}, indent=1)


@dataclass(frozen=True)
class SearchConfig:
    """How a round is chosen.

    ``pool`` candidates are proposed: the generator's, plus neighbours of the best measured
    schedules (MetaSchedule's mutators: tile sizes first), whose share of the new ones grows from
    ``refine_share[0]`` in the first round to ``refine_share[1]`` in the last. The generator's share
    goes to the sketches whose measurements were best (``sketch_mix`` of it stays uniform). The
    tuning's cost model ranks the pool; the best go to the builder, except an ``epsilon`` share
    drawn at random from the rest (exploration). Without a cost model the pool is the round.
    After the first round, a round makes ``1 - carry`` of its pool anew; the rest are the
    best-ranked candidates the last round left unchosen, ranked again with what was measured
    since: they cost no replay, and no features with the TensorGPT cost model (it keeps them).
    At 0.75, the default, a 64-trial tune makes 448 candidates instead of 1024, for the same tuned
    latency (0.997x per trial, 3 seeds) and about half the search time (docs/benchmarks.md,
    "fifteenth run"). ``first_pool`` (None: ``pool``) is the first round's pool: the later ones
    grow from what it left by their new share each round, up to ``pool``. A first pool of 128
    brought the search under 10 % of the wall at 0.96-1.00x per trial on one machine (2 seeds,
    "sixteenth run"), but with ``carry=0.875`` cost 5 % per trial on another (3 seeds,
    "seventeenth run", where 7/8 carried alone cost 4.4 %): neither is the default.
    ``prior_share`` of the generator's proposals come from the uniform prior (a
    ``MixtureGenerator``), so a generator worse than uniform cannot drag the search below it;
    a generator that mixes the prior in per token (``SamplingConfig.prior_mix``) is left alone.
    A round of n trials proposes at most ``pool_per_trial`` x n: a whole model's tune spreads its
    budget in rounds of 1-3 trials, where a full pool would cost more time than the trials.

    ``time_share`` (None: off) bounds the search's own time (proposing, realising, ranking: what
    the tuning waits for between measurements) to that share of a task's tuning time: each round's
    pool is what the remaining allowance buys at the task's measured cost per pool slot, between
    ``min_pool_per_trial`` x n and the limits above (the first round, with nothing timed yet,
    proposes ``min_pool_per_trial`` x n). Off by default: a 10 % share with pools made anew
    (pools of ~64) cost 8.5 % in tuned latency at 64 trials (docs/benchmarks.md, "seventh run") —
    per trial, a large pool ranked by the cost model is worth its time; pools of 512 gained
    nothing over 256 ("twelfth run"), pools of 128 lost 2.5 % for a 16 % share ("fourteenth run").
    """

    pool: int = 256
    first_pool: int | None = None
    carry: float = 0.75
    pool_per_trial: int = 64
    time_share: float | None = None
    min_pool_per_trial: int = 4
    epsilon: float = 0.1
    refine_top: int = 8
    refine_share: tuple[float, float] = (0.1, 0.75)
    sketch_mix: float = 0.3
    prior_share: float = 0.5


@dataclass
class _Candidate:
    """A valid, new schedule in this round's pool and where it came from (for ``observe``)."""

    candidate: MeasureCandidate
    sketch: int | None  # index into the task's sketches; None where unknown (a resumed record)
    decisions: list[Decision] | None
    key: int  # structural hash of the scheduled module
    origin: str  # see TaskStats.measured_from
    seed: int = 1  # the replay's (TVM samples the slots a decision set leaves open with it)
    exact: bool = True  # False: made from a module trace (``Sketch.apply``), replayed exactly once chosen
    trace: Trace | None = None  # what to replay exactly (a refined child's); None: the sketch with ``decisions``

    @property
    def refined(self) -> bool:
        return self.origin.startswith(REFINED)


@dataclass
class _Measured:
    sketch: int | None
    trace: Trace
    latency: float  # seconds; inf when the build or run failed
    origin: str = ""  # see TaskStats.measured_from ("" for a resumed record)


class _TaskState:
    """What one task's tuning remembers between rounds (created in ``pre_tuning``)."""

    def __init__(self, max_trials: int, per_iter: int, sketches: list[Sketch], cost_model: Any) -> None:
        self.max_trials = max_trials
        self.per_iter = per_iter
        self.sketches = sketches
        self.cost_model = cost_model
        self.trials = 0
        self.keys: set[int] = set()  # modules measured (or sent to measure) already
        # (sketch index, decisions) realised already, valid or not: a repeat is known without
        # replaying it (a refinement batch repeats most of its mutations)
        self.decided: set[tuple] = set()
        self.search_s = 0.0  # time spent making rounds
        self.slots = 0  # pool slots made anew so far (the search's time grows with them)
        self.measure_s = 0.0  # time from handing a round over to its results coming back
        self.timed = 0  # candidates measured in that time (resumed records are not)
        self.sent_at: float | None = None
        self.measured: list[_Measured] = []
        self.pending: list[_Candidate] = []
        self.carried: list[_Candidate] = []  # the last pool's unchosen candidates, best-ranked first

    @property
    def first_round(self) -> bool:
        """Nothing made yet: nothing to carry, and ``SearchConfig.first_pool`` applies."""
        return self.slots == 0

    def best(self, top: int) -> list[_Measured]:
        return sorted((m for m in self.measured if np.isfinite(m.latency)), key=lambda m: m.latency)[:top]

    def sketch_weights(self, mix: float) -> np.ndarray:
        """Where the generator's share goes: ``mix`` uniform, the rest by each sketch's best
        measured throughput relative to the task's best (unmeasured sketches count as average)."""
        n = len(self.sketches)
        best = np.full(n, np.nan)
        for m in self.measured:
            if m.sketch is not None and np.isfinite(m.latency):
                best[m.sketch] = np.nanmin([best[m.sketch], m.latency])
        if np.all(np.isnan(best)):
            return np.full(n, 1.0 / n)
        score = np.nanmin(best) / best
        score = np.where(np.isnan(score), np.nanmean(score), score) ** 4
        return mix / n + (1 - mix) * score / score.sum()

    def affordable(self, size: int, share: float) -> int:
        """Pool slots the next round of ``size`` trials may use so that the search stays within
        ``share`` of the time (search plus measurement) spent so far and in that round; 0 before
        anything was timed."""
        if not self.slots or not self.timed:
            return 0
        measure_next = self.measure_s / self.timed * size
        allowance = share / (1 - share) * (self.measure_s + measure_next) - self.search_s
        return int(allowance / (self.search_s / self.slots))

    def first(self, sketch: int | None, decisions: Sequence[Decision] | None, annotations: tuple | None = None) -> bool:
        """Whether this decision set, with these annotations (``Sketch.annotations``; None: the
        sketch's own), is new to the task (and remember it). Unknown ones count as new, and so do
        sets that leave a decision to TVM (None: sampled anew at each replay)."""
        if sketch is None or decisions is None or any(d is None for d in decisions):
            return True
        key = (sketch, tuple(decisions), annotations)
        if key in self.decided:
            return False
        self.decided.add(key)
        return True


def _with_prior(generator: Generator, share: float) -> Generator:
    """``generator`` with ``share`` of its proposals from the prior; one that mixes the prior in
    itself (the prior, a mixture the caller built, a model sampling with ``prior_mix``) is kept as it is."""
    if share <= 0 or generator.mixes_prior:
        return generator
    return MixtureGenerator([(generator, 1 - share), (PriorGenerator(), share)])


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
    """Search strategy driven by a ``Generator`` (the bundled checkpoint by default).

    Parameters
    ----------
    generator : Generator | str | None
        Proposes decision sets: a ``Generator``, "default" or None (the bundled checkpoint),
        "prior" (uniform legal decisions) or a checkpoint folder; mixed with the prior by
        ``search.prior_share``.
    search : SearchConfig
        Pool size, refinement and exploration (see ``SearchConfig``).
    stats : TuningStats | None
        Counters shared with clones, so callers can read them after tuning.
    """

    def __init__(self, generator: Generator | str | None = None, search: SearchConfig = SearchConfig(),
                 stats: TuningStats | None = None) -> None:  # fmt: skip
        self.generator = _with_prior(resolve_generator(generator), search.prior_share)
        self.search = search
        self.stats = stats if stats is not None else TuningStats()
        self.context: TuneContext | None = None
        self.rng = np.random.default_rng(0)
        self.state: _TaskState | None = None
        self.task_log = logger
        self.postprocs: list = []
        self.mutators: tuple[list, np.ndarray] = ([], np.zeros(0))
        self.workers = 1

    def _initialize_with_tune_context(self, context: "TuneContext") -> None:
        self.context = context
        self.task_log = task_logger(str(context.task_name))
        self.postprocs = resolved_postprocs(context)
        self.workers = max(1, int(context.num_threads or 1))
        mutators = resolved_mutators(context)
        weights = np.asarray(list(mutators.values()), dtype=float)
        self.mutators = (list(mutators), weights / weights.sum() if weights.size else weights)
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
        self.state = _TaskState(max_trials, num_trials_per_iter, sketches, cost_model)
        if database is not None:
            self._load_measured(context, database)

    def post_tuning(self) -> None:
        self.state = None

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        context, state = self._require_context(), self._require_state()
        stats = self.stats.task(context.task_name)
        if state.trials >= state.max_trials or STOP.is_set():
            return None  # None (not []) tells the task scheduler this task is finished
        started_round = time.perf_counter()
        size = min(state.per_iter, state.max_trials - state.trials)
        carried, new = self._round_plan(state, size)
        pool = state.carried[:carried]
        seen_now = {c.key for c in pool}
        want = carried + new
        progress = state.trials / max(1, state.max_trials - state.per_iter)
        low, high = self.search.refine_share
        refine = int(new * (low + (high - low) * min(1.0, progress))) if state.best(1) else 0
        with Profiler.timeit("TensorGPT/Refine"):
            self._refine(state, stats, refine, pool, seen_now)
        for _ in range(4):  # a few tries when duplicates or invalid candidates thin a round out
            if len(pool) >= want:
                break
            started = time.perf_counter()
            with Profiler.timeit("TensorGPT/Generate"):
                proposals = self._propose(state, want - len(pool))
            stats.generation_s += time.perf_counter() - started
            with Profiler.timeit("TensorGPT/Postprocess"):
                self._validate(proposals, state, stats, pool, seen_now)
        if not pool:
            self._log(logging.INFO, "TensorGPT: no new valid candidate; the search space looks exhausted")
            return None
        chosen = self._choose(context, state, pool, size)
        with Profiler.timeit("TensorGPT/Postprocess"):
            chosen = self._exact(state, stats, chosen)
        state.search_s += time.perf_counter() - started_round
        state.slots += new
        stats.slots += new
        stats.pooled += len(pool)
        state.sent_at = time.perf_counter()
        state.trials += len(chosen)
        state.keys.update(c.key for c in chosen)
        state.pending = chosen
        stats.rounds += 1
        stats.measured += len(chosen)
        self._log(logging.INFO,
            "TensorGPT round %d: generated %d, valid %d, duplicates %d, pool %d, sent %d (%d refined; trials %d/%d)",
            stats.rounds, stats.generated, stats.valid, stats.duplicates, len(pool), len(chosen),
            sum(c.refined for c in chosen), state.trials, state.max_trials,
        )  # fmt: skip
        return [c.candidate for c in chosen]

    def notify_runner_results(self, measure_candidates: list[MeasureCandidate], results: list[RunnerResult]) -> None:
        context, state = self._require_context(), self._require_state()
        stats = self.stats.task(context.task_name)
        if state.sent_at is not None:
            state.measure_s += time.perf_counter() - state.sent_at
            state.timed += len(results)
            state.sent_at = None
        for pending, result in zip(state.pending, results):
            error = result.error_msg
            ok = error is None and result.run_secs is not None and len(result.run_secs) > 0
            latency = mean_latency(result.run_secs) if ok else None
            # The task scheduler passes a builder's error on as the runner result's error, prefixed
            # with the builder's name (e.g. "LocalBuilder: Timeout ..."); other errors come later.
            if error is None or "Builder" not in error.split(":", 1)[0]:
                stats.built += 1
            if ok:
                stats.ran += 1
            trace = pending.candidate.sch.trace
            stats.measured_from[pending.origin] = stats.measured_from.get(pending.origin, 0) + 1
            if latency is not None and all(latency < m.latency for m in state.measured):
                stats.best_from = pending.origin
            state.measured.append(_Measured(pending.sketch, trace, latency if latency is not None else float("inf"),
                                            pending.origin))  # fmt: skip
            if pending.sketch is not None and pending.decisions is not None:
                self.generator.observe(state.sketches[pending.sketch], pending.decisions, latency)
        state.pending = []
        self._log(logging.INFO, "TensorGPT: built %d, ran %d so far", stats.built, stats.ran)

    def clone(self) -> SearchStrategy:
        return TensorGPTSearchStrategy(generator=self.generator, search=self.search, stats=self.stats)

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
            )  # fmt: skip
            sketches.append(Sketch.from_schedule(context.mod, Schedule(context.mod)))
        return sketches

    def _load_measured(self, context: "TuneContext", database: "Database") -> None:
        """Remember modules already measured for this workload (resume, no re-measuring) and
        their latencies (refinement starts from them)."""
        state, stats = self._require_state(), self.stats.task(context.task_name)
        if not database.has_workload(context.mod):
            return
        workload = database.commit_workload(context.mod)
        foreign = 0
        for record in database.get_all_tuning_records():
            if not tvm_ffi.structural_equal(record.workload.mod, workload.mod):
                continue
            if not same_device(record.target, context.target):
                foreign += 1  # measured for another device: neither a finished trial nor a latency here
                continue
            sch = self._replay(state, record.trace)
            if sch is None:
                continue
            state.keys.add(int(tvm_ffi.structural_hash(sch.mod)))
            state.measured.append(_Measured(None, record.trace, mean_latency(record.run_secs)))
        state.trials = min(len(state.keys), state.max_trials)
        stats.resumed_records = len(state.keys)
        if foreign:
            self._log(logging.WARNING, "TensorGPT: %d record(s) of this workload were measured for another target "
                      "than %s; not resuming from them", foreign, json.dumps(device_key(context.target)))  # fmt: skip
        if state.keys:
            self._log(logging.INFO, "TensorGPT: resuming, %d records already in the database", len(state.keys))

    def _replay(self, state: _TaskState, trace: Trace, seed: int = 1, module: Trace | None = None) -> Schedule | None:
        """``trace`` (or its ``module`` trace, ``Sketch.module_trace``) replayed without its
        postprocessing, then postprocessed as a candidate is: the one way every schedule here is
        made, so measured and new candidates hash alike (replaying the postprocessing instructions
        does not always give the module the postprocessors gave)."""
        sch = state.sketches[0].blank(seed)  # every sketch is of the task's module
        try:
            (trace if module is None else module).apply_to_schedule(sch, remove_postproc=True)
            sch.enter_postproc()
            if not all(p.apply(sch) for p in self.postprocs):
                return None
        except TVM_ERRORS:
            return None
        return sch

    def _parallel(self, fn: Callable[[Any], Any], jobs: list) -> list:
        """``fn`` of each job, in order, on the tuning's threads: TVM releases the GIL while it
        replays and postprocesses (each job its own Schedule), and builder and runner are idle
        while a round is made, as in MetaSchedule's own evolutionary search."""
        if self.workers < 2 or len(jobs) < 2:
            return [fn(job) for job in jobs]
        with ThreadPoolExecutor(self.workers) as threads:
            return list(threads.map(fn, jobs))

    def _seed(self) -> int:
        return int(self.rng.integers(1, 2**31 - 1))  # TVM accepts 1 .. 2^31-1 only

    def _round_plan(self, state: _TaskState, size: int) -> tuple[int, int]:
        """(carried, new): how many of the last round's unchosen candidates the round of ``size``
        trials keeps, and how many pool slots it makes anew (see ``SearchConfig``). Too few carried
        (a small space): at least the round's trials are made anew."""
        want = self._pool_size(state, size)
        if state.first_round or state.cost_model is None:
            return 0, want
        carried = min(int(want * self.search.carry), len(state.carried))
        return carried, max(want - int(want * self.search.carry), size - carried)

    def _pool_size(self, state: _TaskState, size: int) -> int:
        """How many candidates the round of ``size`` trials proposes (see ``SearchConfig``)."""
        if state.cost_model is None:
            return size
        first = state.first_round and self.search.first_pool is not None
        want = min(self.search.first_pool if first else self.search.pool, self.search.pool_per_trial * size)
        if self.search.time_share is not None:
            floor = self.search.min_pool_per_trial * size
            want = min(want, max(floor, state.affordable(size, self.search.time_share)))
        return max(size, want)

    def _propose(self, state: _TaskState, num: int) -> list[Proposal]:
        """``num`` proposals, spread over the sketches by ``_TaskState.sketch_weights``."""
        counts = self.rng.multinomial(num, state.sketch_weights(self.search.sketch_mix))
        proposals = []
        for index in np.flatnonzero(counts):
            made = self.generator.generate([state.sketches[index]], int(counts[index]), self.rng)
            proposals += [replace(p, sketch_index=int(index)) for p in made]
        return proposals

    def _admit(self, sch: Schedule, state: _TaskState, pool: list[_Candidate], seen_now: set[int],
               stats: TaskStats, **fields: Any) -> None:  # fmt: skip
        """Add a valid schedule to the pool unless it was measured or is already there."""
        key = int(tvm_ffi.structural_hash(sch.mod))
        if key in state.keys or key in seen_now:
            stats.duplicates += 1
            return
        seen_now.add(key)
        candidate = MeasureCandidate(sch, ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
        pool.append(_Candidate(candidate, key=key, **fields))

    def _validate(self, proposals: list[Proposal], state: _TaskState, stats: TaskStats, pool: list[_Candidate],
                  seen_now: set[int]) -> None:  # fmt: skip
        """Realise each new proposal on its sketch (in parallel, from a module trace: only the
        module matters until it is chosen, see ``_exact``); keep the new valid schedules."""
        fresh = [p for p in proposals if state.first(p.sketch_index, p.decisions)]
        stats.duplicates += len(proposals) - len(fresh)
        proposals = fresh
        jobs = [(proposal, self._seed()) for proposal in proposals]
        done = self._parallel(lambda job: state.sketches[job[0].sketch_index].realise(job[0].decisions, self.postprocs,
                                                                                      seed=job[1], exact=False), jobs)  # fmt: skip
        for (proposal, seed), realised in zip(jobs, done):
            stats.generated += 1
            if not realised.valid:
                continue
            stats.valid += 1
            self._admit(realised.schedule, state, pool, seen_now, stats, sketch=proposal.sketch_index,
                        decisions=proposal.decisions, origin=proposal.origin or self.generator.origin, seed=seed,
                        exact=realised.exact)  # fmt: skip

    def _exact(self, state: _TaskState, stats: TaskStats, chosen: list[_Candidate]) -> list[_Candidate]:
        """``chosen`` with each candidate made from a module trace replayed exactly (in parallel):
        the trace measured, stored and mutated later is the sketch's (or the mutated one's). One whose module differs from
        the pool's is counted (``TaskStats.inexact``) and kept only if valid and new."""
        redo = [c for c in chosen if not c.exact]
        done = self._parallel(lambda c: self._exact_schedule(state, c), redo)
        exact = {id(c): sch for c, sch in zip(redo, done)}
        out: list[_Candidate] = []
        for c in chosen:
            if c.exact:
                out.append(c)
                continue
            sch = exact[id(c)]
            key = int(tvm_ffi.structural_hash(sch.mod)) if sch is not None else None
            if key != c.key:
                stats.inexact += 1
                if sch is None or key in state.keys or any(key == o.key for o in out):
                    continue
            candidate = MeasureCandidate(sch, ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
            out.append(replace(c, candidate=candidate, key=key, exact=True))
        return out

    def _exact_schedule(self, state: _TaskState, c: _Candidate) -> Schedule | None:
        """``c`` replayed exactly and postprocessed (None: invalid)."""
        if c.trace is not None:
            return self._replay(state, c.trace, c.seed)
        realised = state.sketches[c.sketch].realise(c.decisions, self.postprocs, seed=c.seed)
        return realised.schedule if realised.valid else None

    def _refine(self, state: _TaskState, stats: TaskStats, num: int, pool: list[_Candidate], seen_now: set[int]) -> None:
        """Up to ``num`` neighbours of the best measured schedules: a mutator (drawn by its
        probability) applied to a parent's trace, replayed and postprocessed as MetaSchedule's
        evolutionary search does. Children keep their parent's sketch (mutators keep the structure);
        a child whose decisions and annotations were realised before is dropped before it is
        replayed (``MutateParallel`` rewrites an annotation, not a decision: its child repeats its
        parent's decisions, and so may the tile-mutated children of that child).
        A child is replayed from its module trace where one can be made (``Sketch.module_trace``),
        exactly once it is chosen (``_exact``)."""
        mutators, weights = self.mutators
        parents = state.best(self.search.refine_top)
        if not num or not mutators or not parents:
            return
        for _ in range(3):  # mutations may fail or repeat: a few batches, each replayed in parallel
            jobs = []
            for _ in range(num):
                parent = parents[int(self.rng.integers(len(parents)))]
                mutator = mutators[int(self.rng.choice(len(mutators), p=weights))]
                try:
                    trace = mutate(mutator, parent.trace, self._seed())
                except TVM_ERRORS:
                    continue
                if trace is None:
                    continue
                decisions = self._decisions(state, parent.sketch, trace)
                annotations = None if parent.sketch is None else state.sketches[parent.sketch].annotations(trace)
                if state.first(parent.sketch, decisions, annotations):
                    jobs.append((parent, trace, decisions, self._seed()))
                else:
                    stats.duplicates += 1
            replayed = self._parallel(lambda job: self._replay_child(state, *job), jobs)
            for (parent, trace, decisions, seed), (sch, exact) in zip(jobs, replayed):
                if sch is not None and num > 0:
                    num -= self._admit_child(state, stats, pool, seen_now, parent, decisions, sch,
                                             trace=trace, seed=seed, exact=exact)  # fmt: skip

    def _replay_child(self, state: _TaskState, parent: _Measured, trace: Trace, decisions: list[Decision] | None,
                      seed: int) -> tuple[Schedule | None, bool]:  # fmt: skip
        """A refined child replayed from its module trace where one can be made (in a worker
        thread: making it may replay a prefix to count loops), and whether it was replayed exactly."""
        module = None if decisions is None else state.sketches[parent.sketch].module_trace(trace, decisions)
        return self._replay(state, trace, seed, module), module is None

    @staticmethod
    def _decisions(state: _TaskState, sketch: int | None, trace: Trace) -> list[Decision] | None:
        """``trace``'s decisions in ``state.sketches[sketch]``'s language (None where unknown)."""
        if sketch is None:
            return None
        try:
            return state.sketches[sketch].read_decisions(trace)
        except ValueError:
            return None

    def _admit_child(self, state: _TaskState, stats: TaskStats, pool: list[_Candidate], seen_now: set[int],
                     parent: _Measured, decisions: list[Decision] | None, sch: Schedule, **fields: Any) -> int:  # fmt: skip
        """Admit a refined schedule with its parent's sketch; 1 if it joined the pool."""
        before = len(pool)
        root = parent.origin.removeprefix(f"{REFINED} from ")  # the proposal its chain started from
        origin = f"{REFINED} from {root}" if root and root != REFINED else REFINED
        self._admit(sch, state, pool, seen_now, stats, sketch=parent.sketch, decisions=decisions, origin=origin,
                    **fields)  # fmt: skip
        return len(pool) - before

    def _choose(self, context: "TuneContext", state: _TaskState, pool: list[_Candidate], size: int) -> list[_Candidate]:
        """The cost model's best ``size`` of the pool, ``epsilon`` of them drawn from the rest (the
        others, best-ranked first, are ``state.carried`` to the next round)."""
        state.carried = []
        if state.cost_model is None or len(pool) <= size:
            return pool[:size]
        with Profiler.timeit("TensorGPT/CostModel"):
            scores = np.asarray(state.cost_model.predict(context, [c.candidate for c in pool]), dtype=float)
        order = [int(i) for i in np.argsort(-scores, kind="stable")]
        explore = min(int(round(size * self.search.epsilon)), len(pool) - size)
        best = order[: size - explore]
        rest = order[size - explore :]
        picked = best + [rest[int(i)] for i in self.rng.choice(len(rest), explore, replace=False)] if explore else best
        chosen = set(picked)
        state.carried = [pool[i] for i in order if i not in chosen]
        return [pool[i] for i in picked]
