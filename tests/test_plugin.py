"""The MetaSchedule plugin: registration of the names, the strategy in every tuning flow, resume,
the relax pipeline."""

import logging
import subprocess
import sys

import numpy as np
import pytest
import tvm
import tvm_ffi
from conftest import kill_when_recorded, record_lines
from tvm import relax
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms

import tvm_tensorgpt
from tvm_tensorgpt.tvm_glue import build_module
from tvm_tensorgpt.tvm_glue.builder import PooledBuilder
from tvm_tensorgpt.workloads import get_workload
from tvm_tensorgpt.workloads.models import import_model, prepare


def _valid(records) -> int:
    return sum(1 for r in records if r.run_secs is not None and len(r.run_secs) > 0)


def test_tune_tir_matmul_128(llvm_target, tmp_path):
    stats = tvm_tensorgpt.TuningStats()
    database = ms.tune_tir(
        get_workload("matmul-128").build(),
        llvm_target,
        str(tmp_path),
        max_trials_global=16,
        num_trials_per_iter=8,
        strategy=tvm_tensorgpt.TensorGPTSearchStrategy(stats=stats),
        space="tensorgpt",
        builder="tensorgpt",
        num_tuning_cores=2,
        seed=7,
    )
    records = database.get_all_tuning_records()
    assert len(records) >= 8
    assert _valid(records) >= 0.9 * len(records)
    total = stats.total()
    assert total.measured == len(records) and total.ran == _valid(records)
    assert total.valid <= total.generated and total.rounds >= 1
    # the per-task MetaSchedule log records the strategy's rounds
    logs = "".join(p.read_text() for p in (tmp_path / "logs").iterdir())
    assert "TensorGPT round 1" in logs


def test_tune_relax_conv_block_from_pytorch(llvm_target, tmp_path):
    raw, _, _ = import_model("conv-block")
    mod = prepare(raw, llvm_target)
    database = ms.relax_integration.tune_relax(
        mod,
        params={},
        target=llvm_target,
        work_dir=str(tmp_path),
        max_trials_global=16,
        num_trials_per_iter=8,
        strategy="tensorgpt",
        space="tensorgpt",
        builder="tensorgpt",
        seed=3,
    )
    records = database.get_all_tuning_records()
    assert len(records) >= 8
    assert _valid(records) >= 0.9 * len(records)


def test_tune_tasks_over_contexts(llvm_target, tmp_path):
    contexts = [
        ms.TuneContext(
            mod=get_workload(name).build(),
            target=llvm_target,
            space_generator="tensorgpt",
            search_strategy="tensorgpt",
            task_name=name,
            num_threads=2,
            rand_state=5,
        ).clone()
        for name in ("matmul-128", "softmax-bert")
    ]
    database = ms.tune_tasks(
        tasks=contexts,
        task_weights=[1.0, 1.0],
        work_dir=str(tmp_path),
        max_trials_global=8,
        max_trials_per_task=4,
        num_trials_per_iter=4,
        builder="tensorgpt",
    )
    records = database.get_all_tuning_records()
    assert len(records) == 8 and _valid(records) >= 7


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_empty_design_space_falls_back_to_the_prior(llvm_target):
    mod = get_workload("softmax-bert").build()
    strategy = tvm_tensorgpt.TensorGPTSearchStrategy()
    context = ms.TuneContext(
        mod=mod, target=llvm_target, space_generator="tensorgpt", search_strategy=strategy, num_threads=1
    )
    collect = _Collect()
    log = logging.getLogger("tvm_tensorgpt")
    log.addHandler(collect)
    try:
        context.search_strategy.pre_tuning(4, 4, [], None, None)
    finally:
        log.removeHandler(collect)
    assert any("no usable design space" in m for m in collect.messages)
    candidates = context.search_strategy.generate_measure_candidates()
    assert len(candidates) == 1  # only one module exists without a design space
    assert "T_softmax" in candidates[0].sch.mod.script()


def test_strategy_stops_with_none_when_exhausted(llvm_target):
    """A tiny space runs out of new candidates: the strategy returns None, never []."""
    from tvm import te

    x = te.placeholder((4,), name="X")
    y = te.compute((4,), lambda i: x[i] * 2.0, name="Y")
    mod = tvm.IRModule({"main": te.create_prim_func([x, y])})
    context = ms.TuneContext(
        mod=mod, target=llvm_target, space_generator="tensorgpt", search_strategy="tensorgpt", num_threads=1
    )
    strategy = context.search_strategy
    strategy.pre_tuning(100, 8, context.generate_design_space(), None, None)
    seen = 0
    for _ in range(20):
        batch = strategy.generate_measure_candidates()
        if batch is None:
            break
        assert len(batch) > 0
        seen += len(batch)
    assert batch is None and 0 < seen < 100


def test_rounds_do_not_depend_on_the_threads_that_make_them(llvm_target):
    """Candidates are replayed and postprocessed on the tuning's threads: the same rounds (a first
    one from the generator, a second with refinement of the "measured" best) with 1 and 2 threads."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tvm_tensorgpt.plugin.strategy import TensorGPTSearchStrategy, TuningStats

    stats = TuningStats()

    def rounds(threads: int) -> list[list[int]]:
        strategy = TensorGPTSearchStrategy("prior", stats=stats)
        context = ms.TuneContext(mod=get_workload("matmul-128").build(), target=llvm_target, space_generator="tensorgpt",
                                 search_strategy=strategy, num_threads=threads, rand_state=7)  # fmt: skip
        assert strategy.workers == threads
        strategy.pre_tuning(16, 8, context.generate_design_space(), None, None)
        out = []
        for _ in range(2):
            batch = strategy.generate_measure_candidates()
            out.append([int(tvm_ffi.structural_hash(c.sch.mod)) for c in batch])
            strategy.notify_runner_results(batch, [RunnerResult([1e-3 * (i + 1)], None) for i in range(len(batch))])
        return out

    one, two = rounds(1), rounds(2)
    assert one == two and len(one[0]) == len(one[1]) == 8 and not set(one[0]) & set(one[1])
    assert stats.total().refined > 0  # the second rounds refined (in parallel with 2 threads)


def test_measured_candidates_carry_the_sketchs_trace(llvm_target):
    """The pool is made from module traces (``Sketch.apply(exact=False)``); what goes to the builder
    is replayed exactly: the pool's module, with the sketch's compute-location samples in its trace."""
    from tvm_tensorgpt.generators import PriorGenerator
    from tvm_tensorgpt.plugin.strategy import TensorGPTSearchStrategy, TuningStats

    stats = TuningStats()
    strategy = TensorGPTSearchStrategy(PriorGenerator(tvm_locations=False), stats=stats)  # every location decided
    context = ms.TuneContext(mod=get_workload("conv2d-resnet").build(), target=llvm_target, space_generator="tensorgpt",
                             search_strategy=strategy, num_threads=2, rand_state=5)  # fmt: skip
    strategy.pre_tuning(8, 8, context.generate_design_space(), None, None)
    batch = strategy.generate_measure_candidates()
    assert len(batch) == 8 and stats.total().inexact == 0
    for candidate, chosen in zip(batch, strategy.state.pending):
        assert "SampleComputeLocation" in [inst.kind.name for inst in candidate.sch.trace.insts]
        assert strategy.state.sketches[chosen.sketch].read_decisions(candidate.sch.trace) == chosen.decisions


def _refined_pool(llvm_target, mutator: type, threads: int, seed: int, num: int):
    """A strategy on conv2d-resnet after one "measured" round of the prior (every decision known),
    its parents' modules, and the pool ``_refine`` makes from them with ``mutator`` alone."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tvm_tensorgpt.generators import PriorGenerator
    from tvm_tensorgpt.plugin.strategy import TaskStats, TensorGPTSearchStrategy

    strategy = TensorGPTSearchStrategy(PriorGenerator(tvm_locations=False))
    context = ms.TuneContext(mod=get_workload("conv2d-resnet").build(), target=llvm_target, space_generator="tensorgpt",
                             search_strategy=strategy, num_threads=threads, rand_state=seed)  # fmt: skip
    strategy.pre_tuning(64, 8, context.generate_design_space(), None, None)
    batch = strategy.generate_measure_candidates()
    strategy.notify_runner_results(batch, [RunnerResult([1e-3 * (i + 1)], None) for i in range(len(batch))])
    strategy.mutators = ([m for m in strategy.mutators[0] if isinstance(m, mutator)], np.ones(1))
    pool, stats = [], TaskStats()
    strategy._refine(strategy.state, stats, num, pool, set())
    return strategy, {int(tvm_ffi.structural_hash(c.sch.mod)) for c in batch}, pool, stats


def test_parallel_mutations_reach_the_pool(llvm_target):
    """MutateParallel changes an annotation, not a decision: its children repeat their parent's
    decisions and must not be dropped as repeats before their module is hashed."""
    from tvm.s_tir.meta_schedule.mutator import MutateParallel

    strategy, parents, pool, _ = _refined_pool(llvm_target, MutateParallel, threads=1, seed=11, num=8)
    assert pool and all(c.refined and c.key not in parents for c in pool)
    # the child's annotation is part of its dedup key: a descendant that mutates its tiles back to
    # decisions seen with the sketch's annotation is still new
    state = strategy.state
    for c in pool:
        sketch = state.sketches[c.sketch]
        assert sketch.annotations(c.trace) is not None
        assert not state.first(c.sketch, c.decisions, sketch.annotations(c.trace))  # remembered by _refine
    assert all(state.sketches[m.sketch].annotations(m.trace) is None for m in state.measured)
    c = pool[0]
    assert state.first(c.sketch, c.decisions, (("meta_schedule.parallel", 1),))  # another extent: new


def test_refined_children_are_ranked_from_module_traces_and_measured_exactly(llvm_target):
    """A tile-mutated child is replayed for the pool from its module trace (no compute-location
    sampling); once chosen, its own trace is replayed exactly: what goes to the builder carries the
    sampling instructions and the child's decisions, mostly the module the pool ranked."""
    from tvm.s_tir.meta_schedule.mutator import MutateTileSize

    strategy, _, pool, stats = _refined_pool(llvm_target, MutateTileSize, threads=2, seed=13, num=16)
    assert len(pool) >= 8 and all(not c.exact and c.trace is not None for c in pool)
    for c in pool:
        assert "SampleComputeLocation" not in [inst.kind.name for inst in c.candidate.sch.trace.insts]
    chosen = strategy._exact(strategy.state, stats, pool)
    ranked = {c.key for c in pool}
    assert sum(c.key in ranked for c in chosen) >= len(pool) // 2  # most replay to the module ranked
    for c in chosen:
        trace = c.candidate.sch.trace
        assert c.exact and "SampleComputeLocation" in [inst.kind.name for inst in trace.insts]
        if c.key in ranked:
            assert strategy.state.sketches[c.sketch].read_decisions(trace) == c.decisions


def test_pool_keeps_the_search_within_its_time_share():
    """The pool a round may propose is what ``time_share`` of the time so far buys at the task's
    cost per pool slot, between ``min_pool_per_trial`` x the round and ``pool``."""
    from tvm_tensorgpt.plugin.strategy import SearchConfig, TensorGPTSearchStrategy, _TaskState

    state = _TaskState(64, 16, [], cost_model=object())
    strategy = TensorGPTSearchStrategy("prior", search=SearchConfig(time_share=0.1, min_pool_per_trial=4, pool=256))
    assert state.affordable(16, 0.1) == 0 and strategy._pool_size(state, 16) == 64  # nothing timed: the floor
    state.timed, state.slots, state.search_s, state.measure_s = 16, 64, 2.0, 10.0
    # 0.1 / 0.9 x (10 s measured + 10 s expected) - 2 s spent = 0.22 s at 2 s / 64 slots a slot
    assert state.affordable(16, 0.1) == 7 and strategy._pool_size(state, 16) == 64
    state.measure_s = 40.0  # slow measurements buy a larger pool: (80 / 9 - 2) / (2 / 64) = 220
    assert state.affordable(16, 0.1) == 220 and strategy._pool_size(state, 16) == 220
    state.measure_s = 400.0
    assert strategy._pool_size(state, 16) == 256  # never beyond the pool
    fixed = TensorGPTSearchStrategy("prior", search=SearchConfig(time_share=None))
    assert fixed._pool_size(_TaskState(64, 16, [], cost_model=object()), 16) == 256
    assert fixed._pool_size(_TaskState(64, 16, [], cost_model=None), 16) == 16  # no ranking: the pool is the round


def test_a_round_carries_its_share_and_makes_at_least_its_trials_anew():
    """After the first round, ``carry`` of the pool comes from the last round's unchosen candidates
    (as many as there are) and the rest is made anew; a small space that left few still makes a
    whole round anew."""
    from tvm_tensorgpt.plugin.strategy import SearchConfig, TensorGPTSearchStrategy, _TaskState

    strategy = TensorGPTSearchStrategy("prior", search=SearchConfig(pool=256, first_pool=128, carry=0.75))
    state = _TaskState(64, 16, [], cost_model=object())
    assert strategy._round_plan(state, 16) == (0, 128)  # the first pool, nothing to carry
    state.slots, state.carried = 128, [object()] * 112
    assert strategy._round_plan(state, 16) == (112, 64)  # grows: 112 carried, a quarter of 256 anew
    state.carried = [object()] * 240
    assert strategy._round_plan(state, 16) == (192, 64)
    state.carried = [object()] * 3
    assert strategy._round_plan(state, 16) == (3, 64)
    assert strategy._round_plan(state, 4) == (3, 64)  # 4 trials: pool of 4 x 64, 3 carried, 64 anew
    small = TensorGPTSearchStrategy("prior", search=SearchConfig(pool=16, carry=0.75))
    state.carried = [object()] * 2
    assert small._round_plan(state, 16) == (2, 14)  # 4 anew is less than the round: 16 - 2 carried
    assert small._round_plan(_TaskState(64, 16, [], cost_model=None), 16) == (0, 16)  # no ranking: no carry


def test_unchosen_candidates_are_carried_to_the_next_round(llvm_target):
    """With ``carry``, a round keeps the best-ranked candidates the last one left unchosen and makes
    only the rest of its pool anew; nothing is sent to measure twice."""
    from tvm.s_tir.meta_schedule.cost_model import CostModel
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tvm_tensorgpt.plugin.strategy import SearchConfig, TensorGPTSearchStrategy, TuningStats

    stats = TuningStats()
    strategy = TensorGPTSearchStrategy("prior", search=SearchConfig(pool=32, carry=0.75), stats=stats)
    context = ms.TuneContext(mod=get_workload("matmul-128").build(), target=llvm_target, space_generator="tensorgpt",
                             search_strategy=strategy, num_threads=1, rand_state=2)  # fmt: skip
    strategy.pre_tuning(24, 8, context.generate_design_space(), None, CostModel.create("tensorgpt"))
    first = strategy.generate_measure_candidates()
    carried = [c.key for c in strategy.state.carried]
    assert len(first) == 8 and len(carried) == stats.total().pooled - 8 >= 24
    strategy.notify_runner_results(first, [RunnerResult([1e-3], None) for _ in first])
    second = strategy.generate_measure_candidates()
    total = stats.total()
    assert total.slots == 32 + 8  # the second round made 8 anew beside the 24 best carried
    assert total.pooled > 32 + 24 and len(second) == 8
    sent = [int(tvm_ffi.structural_hash(c.sch.mod)) for c in first + second]
    assert len(set(sent)) == 16 and set(sent[8:]) & set(carried[:24])  # carried ones won places


def test_a_smaller_first_pool_grows_by_the_new_share(llvm_target):
    """``first_pool`` makes the first round's pool smaller; the later rounds make ``1 - carry`` of
    ``pool`` anew beside what the last one left, so the pool grows back towards ``pool``."""
    from tvm.s_tir.meta_schedule.cost_model import CostModel
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tvm_tensorgpt.plugin.strategy import SearchConfig, TensorGPTSearchStrategy, TuningStats

    stats = TuningStats()
    strategy = TensorGPTSearchStrategy("prior", search=SearchConfig(pool=32, first_pool=16, carry=0.5), stats=stats)
    context = ms.TuneContext(mod=get_workload("matmul-128").build(), target=llvm_target, space_generator="tensorgpt",
                             search_strategy=strategy, num_threads=1, rand_state=3)  # fmt: skip
    strategy.pre_tuning(12, 4, context.generate_design_space(), None, CostModel.create("tensorgpt"))
    first = strategy.generate_measure_candidates()
    assert len(first) == 4 and stats.total().slots == 16 and len(strategy.state.carried) == 12
    strategy.notify_runner_results(first, [RunnerResult([1e-3], None) for _ in first])
    second = strategy.generate_measure_candidates()
    total = stats.total()
    assert len(second) == 4 and total.slots == 16 + 16  # half of the pool of 32 made anew
    assert total.pooled - 16 > 12 + 8  # the 12 carried and most of the 16 new


def test_repeated_decisions_are_not_realised_again(llvm_target):
    """A decision set proposed again (in one round or a later one) is counted as a duplicate
    before it is replayed; only new ones are realised and counted as generated. (One that leaves a
    decision to TVM is new each time: TVM samples it anew.)"""
    from tvm_tensorgpt.generators import Generator, PriorGenerator
    from tvm_tensorgpt.plugin.strategy import SearchConfig, TensorGPTSearchStrategy, TuningStats

    class Repeating(Generator):
        """The same two decision sets, over and over."""

        def __init__(self) -> None:
            self.made = None

        def generate(self, sketches, num, rng):
            self.made = self.made or PriorGenerator(tvm_locations=False).generate(sketches, 2, rng)
            return [self.made[i % 2] for i in range(num)]

    stats = TuningStats()
    strategy = TensorGPTSearchStrategy(Repeating(), search=SearchConfig(prior_share=0.0), stats=stats)
    context = ms.TuneContext(mod=get_workload("matmul-128").build(), target=llvm_target, space_generator="tensorgpt",
                             search_strategy=strategy, num_threads=1, rand_state=3)  # fmt: skip
    spaces = context.generate_design_space()
    strategy.pre_tuning(16, 8, spaces[:1], None, None)
    batch = strategy.generate_measure_candidates()
    total = stats.total()
    assert len(batch) == 2 and total.generated == 2 and total.duplicates == 8 - 2 + 3 * 6  # four tries
    assert strategy.generate_measure_candidates() is None  # nothing new is left to propose
    assert all(strategy.state.first(0, [(2, 64), None]) for _ in range(2))  # TVM decides the None anew


RESUME_SCRIPT = """
import sys, tvm, tvm_tensorgpt
from tvm.s_tir import meta_schedule as ms
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics
from tvm_tensorgpt.workloads import get_workload
target = tvm.target.Target({"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2})
load_tensor_intrinsics(target)
ms.tune_tir(get_workload("matmul-128").build(), target, sys.argv[1], max_trials_global=24,
            num_trials_per_iter=4, strategy="tensorgpt", space="tensorgpt", builder="tensorgpt",
            num_tuning_cores=2)
"""

def test_killed_tune_resumes_without_losing_records(tmp_path):
    script = tmp_path / "tune.py"
    script.write_text(RESUME_SCRIPT)
    work_dir = tmp_path / "work"
    before = kill_when_recorded([sys.executable, str(script), str(work_dir)], work_dir, 8)
    assert 8 <= len(before) < 24, "the tune should have been killed part-way"
    subprocess.run([sys.executable, str(script), str(work_dir)], check=True, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    after = record_lines(work_dir)
    assert after[: len(before)] == before  # nothing lost
    assert len(after) == 24  # the re-run measured only what was missing
    database = ms.database.JSONDatabase(work_dir=str(work_dir))
    records = database.get_all_tuning_records()
    mods = set()
    for record in records:
        sch = Schedule(get_workload("matmul-128").build())
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        mods.add(int(tvm_ffi.structural_hash(sch.mod)))
    assert len(mods) == len(records)  # nothing measured twice


def test_relax_pipeline_pass_uses_tensorgpt(llvm_target, tmp_path):
    """relax's MetaScheduleTuneIRMod pass calls a global function; after the switch it is ours."""
    tvm_tensorgpt.use_tensorgpt_in_relax_pipeline(num_trials_per_iter=4)
    raw, _, _ = import_model("conv-block")
    mod = prepare(raw, llvm_target)
    with llvm_target:
        relax.transform.MetaScheduleTuneIRMod(params={}, work_dir=str(tmp_path), max_trials_global=4)(mod)
    logs = "".join(p.read_text() for p in (tmp_path / "logs").iterdir())
    assert "TensorGPT round 1" in logs
    records = ms.database.JSONDatabase(work_dir=str(tmp_path)).get_all_tuning_records()
    assert len(records) == 4


def test_strategy_and_space_resolve_to_the_plugin():
    assert isinstance(ms.SearchStrategy.create("tensorgpt"), tvm_tensorgpt.TensorGPTSearchStrategy)
    assert isinstance(ms.search_strategy.create("tensorgpt"), tvm_tensorgpt.TensorGPTSearchStrategy)
    assert isinstance(ms.SpaceGenerator.create("tensorgpt"), tvm_tensorgpt.TensorGPTSpaceGenerator)
    builder = ms.Builder.create("tensorgpt", max_workers=1)
    assert isinstance(builder, PooledBuilder) and builder._inst.f_build is build_module  # workers kept across batches


def test_stock_names_keep_working():
    assert isinstance(ms.SearchStrategy.create("evolutionary"), ms.search_strategy.EvolutionarySearch)
    assert isinstance(ms.SearchStrategy.create("replay-trace"), ms.search_strategy.ReplayTrace)
    assert isinstance(ms.SpaceGenerator.create("post-order-apply"), ms.space_generator.PostOrderApply)
    assert isinstance(ms.SpaceGenerator.create("llvm"), ms.space_generator.PostOrderApply)


@pytest.mark.parametrize(
    "factory, what",
    [(ms.SearchStrategy.create, "SearchStrategy"), (ms.SpaceGenerator.create, "SpaceGenerator"),
     (ms.Builder.create, "Builder")],
)  # fmt: skip
def test_unknown_names_list_the_valid_ones(factory, what):
    with pytest.raises(ValueError, match=f"Unknown {what}: 'tensorgtp'") as err:
        factory("tensorgtp")
    assert "tensorgpt" in str(err.value)


def test_registration_is_idempotent():
    before = ms.SearchStrategy.create
    tvm_tensorgpt.register()
    assert ms.SearchStrategy.create is before


def test_tune_context_accepts_the_names(llvm_target):
    from tvm_tensorgpt.workloads import get_workload

    context = ms.TuneContext(
        mod=get_workload("matmul-128").build(),
        target=llvm_target,
        space_generator="tensorgpt",
        search_strategy="tensorgpt",
        num_threads=1,
    ).clone()
    assert len(context.generate_design_space()) == 3
    # the clone carries the target's resolved rules, so any strategy can use this space
    assert context.space_generator.postprocs is not None and len(context.space_generator.postprocs) > 0
    assert context.space_generator.mutator_probs is not None


def test_resume_and_summary_are_keyed_by_workload_and_target(tmp_path):
    """One work_dir, two targets and two workloads: each tune counts and reports only its own
    (workload, target) records, and a last line cut by a kill does not stop a resume."""
    from conftest import HERE_SSE_1C

    from tvm_tensorgpt.hardware import get_profile
    from tvm_tensorgpt.plugin.tune import tune_module

    work_dir = str(tmp_path / "w")
    matmul, norm = get_workload("matmul-128").build(), get_workload("layernorm-bert").build()
    avx2, sse = get_profile(HERE_SSE_1C.replace("sse42", "avx2")), get_profile(HERE_SSE_1C)
    first = tune_module(matmul, avx2, work_dir, trials=4, per_round=4, generator="prior")
    assert first.trials == 4 and first.best_us is not None
    other_target = tune_module(matmul, sse, work_dir, trials=4, per_round=4, generator="prior")
    assert other_target.trials == 4 and other_target.extra["ran"] == 4  # measured anew, not resumed
    other_workload = tune_module(norm, avx2, work_dir, trials=4, per_round=4, generator="prior")
    assert other_workload.trials == 4 and set(other_workload.tasks) == {"main"}
    assert other_workload.best_us != first.best_us  # the layer norm's own latency, not the matmul's
    with open(tmp_path / "w" / "database_tuning_record.json", "a") as f:
        f.write('[0, [[["GetSBlock"')  # a write cut by a kill
    resumed = tune_module(matmul, avx2, work_dir, trials=8, per_round=4, generator="prior")
    assert resumed.trials == 8 and resumed.extra["ran"] == 4 and resumed.best_us <= first.best_us


def test_tune_torch_takes_a_module_and_returns_the_tuned_executable(tmp_path):
    """The Python entry point: an nn.Module and its inputs in, a relax executable out whose output
    matches PyTorch's; anything but (module, tensors) is refused before tuning."""
    import numpy as np
    import torch

    from tvm_tensorgpt.workloads.models import ModelError

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    inputs = (torch.randn(4, 16),)
    executable, result = tvm_tensorgpt.tune_torch(module, inputs, trials=4, per_round=4, work_dir=str(tmp_path / "w"),
                                                  generator="prior")  # fmt: skip
    assert result.trials == 4 and result.extra["model"] == "Sequential" and result.extra["kernels_replaced"] >= 1
    assert result.extra["matches_pytorch"] and result.extra["eager_us"] > 0
    vm = relax.VirtualMachine(executable, tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(inputs[0].numpy()))
    got = (got[0] if isinstance(got, (list, tuple, tvm.ir.Array)) else got).numpy()
    with torch.no_grad():
        np.testing.assert_allclose(got, module(*inputs).numpy(), rtol=1e-2, atol=1e-4)
    with pytest.raises(ModelError, match="must return \\(torch.nn.Module, tuple of example tensors\\)"):
        tvm_tensorgpt.tune_torch(module, ("not a tensor",), trials=1, work_dir=str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()
