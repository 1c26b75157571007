"""Predicted schedules: every kernel a tune did not measure still gets one (zero measurements).

A model's tasks that the trial budget never reached (or whose every trial failed) would otherwise
compile to TVM's naive loops, tens of times slower than any scheduled kernel. For each of them the
search's own first round is run without measuring: the generator (mixed with the prior) proposes a
pool on the task's design spaces, the pretrained cost model ranks it, and its best is kept. The
predictions live beside the measured database (``PredictedDatabase``), never in it: a later tune
with more trials measures those kernels for real.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tvm_ffi
from tvm.ir import IRModule
from tvm.ir.utils import derived_object
from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule import TuneContext
from tvm.s_tir.meta_schedule.cost_model import CostModel
from tvm.s_tir.meta_schedule.database import Database, PyDatabase, TuningRecord, Workload
from tvm.s_tir.schedule import Trace
from tvm.target import Target

from ..generators import Generator
from ..tvm_glue import TVM_ERRORS, load_tensor_intrinsics
from .space import TensorGPTSpaceGenerator
from .strategy import SearchConfig, TensorGPTSearchStrategy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prediction:
    """The cost model's pick for one unmeasured task (``trace`` None: no valid candidate)."""

    task: str
    mod: IRModule
    trace: Trace | None


def predict_schedules(
    tasks: dict[str, IRModule],
    target: Target,
    generator: Generator | str | None = None,
    pool: int = 256,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Prediction]:
    """The cost model's best of a ``pool`` of proposals for each task (name -> TIR module).

    ``generator`` as ``TensorGPTSearchStrategy`` takes it; ``progress`` is called with each
    task's name once it is done.
    """
    load_tensor_intrinsics(target)  # before any TuneContext: else it imports every target's (minutes)
    # nothing is measured: no time to share with, the whole pool is ranked
    search = SearchConfig(pool=pool, pool_per_trial=pool, epsilon=0.0, time_share=None)
    strategy = TensorGPTSearchStrategy(generator, search)
    cost_model = CostModel.create("tensorgpt")
    out = []
    for index, (name, mod) in enumerate(tasks.items()):
        context = TuneContext(mod, target=target, space_generator=TensorGPTSpaceGenerator(),
                              search_strategy=strategy.clone(), task_name=name,
                              rand_state=-1 if seed is None else seed + index)  # fmt: skip
        out.append(Prediction(name, mod, _best_predicted(context, cost_model)))
        if progress is not None:
            progress(name)
    return out


def _best_predicted(context: TuneContext, cost_model: Any) -> Trace | None:
    search = context.search_strategy
    try:
        spaces = context.space_generator.generate_design_space(context.mod)
        search.pre_tuning(1, 1, spaces, None, cost_model)
        chosen = search.generate_measure_candidates()
    except TVM_ERRORS as err:
        logger.warning("TensorGPT: no predicted schedule for %s: %s", context.task_name, err)
        return None
    finally:
        search.post_tuning()
    return chosen[0].sch.trace if chosen else None


@derived_object
class PredictedDatabase(PyDatabase):
    """``measured`` as it is, except that a workload it has no usable record of is scheduled with
    its prediction. Nothing predicted is ever stored: it has no latency."""

    def __init__(self, measured: Database, predictions: list[Prediction]) -> None:
        self.measured = measured
        self.predictions = [(p.mod, p.trace) for p in predictions if p.trace is not None]

    def _trace(self, mod: IRModule) -> Trace | None:
        return next((trace for other, trace in self.predictions if tvm_ffi.structural_equal(mod, other)), None)

    def has_workload(self, mod: IRModule) -> bool:
        return bool(self.measured.has_workload(mod)) or self._trace(mod) is not None

    def commit_workload(self, mod: IRModule) -> Workload:
        return self.measured.commit_workload(mod)

    def commit_tuning_record(self, record: TuningRecord) -> None:
        self.measured.commit_tuning_record(record)

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        return list(self.measured.get_top_k(workload, top_k))

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self.measured.get_all_tuning_records())

    def query_tuning_record(self, mod: IRModule, target: Target, workload_name: str) -> TuningRecord | None:
        """The measured best; else the prediction as a record without latency (relax's
        ``MetaScheduleApplyDatabase`` replays the trace of what this returns)."""
        record = self.measured.query_tuning_record(mod, target, workload_name)
        trace = self._trace(mod) if record is None else None
        return record if trace is None else TuningRecord(trace, Workload(mod), None, target)

    def query_schedule(self, mod: IRModule, target: Target, workload_name: str) -> Schedule | None:
        record = self.query_tuning_record(mod, target, workload_name)
        if record is None:
            return None
        sch = Schedule(mod)
        try:
            record.trace.apply_to_schedule(sch, remove_postproc=False)
        except TVM_ERRORS as err:  # the kernel keeps its default loops, and says so
            logger.warning("TensorGPT: the schedule of %s did not replay (%s); left unscheduled", workload_name, err)
            return None
        return sch

    def query_ir_module(self, mod: IRModule, target: Target, workload_name: str) -> IRModule | None:
        sch = self.query_schedule(mod, target, workload_name)
        return None if sch is None else sch.mod

    def __len__(self) -> int:
        return len(self.measured)
