"""The pretrained cost model: trained from records, warm on any profiled device, learning per task,
and usable wherever MetaSchedule takes a cost model (cost_model="tensorgpt")."""

import logging
import shutil

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.arg_info import ArgInfo
from tvm.s_tir.meta_schedule.runner import RunnerResult

import tvm_tensorgpt
from tvm_tensorgpt.costmodel import (
    DEFAULT_COST_MODEL,
    FEATURE_DIM,
    CostModelError,
    Pretrained,
    TensorGPTCostModel,
)
from tvm_tensorgpt.generators import PriorGenerator
from tvm_tensorgpt.data.collect import open_database
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.train.costmodel import (
    CostModelConfig,
    evaluate,
    fresh_xgb,
    record_groups,
    top_recall,
    train_cost_model,
)
from tvm_tensorgpt.tvm_glue import resolved_postprocs
from tvm_tensorgpt.workloads import get_workload


@pytest.fixture(scope="session")
def tiny_cost_model(tmp_path_factory):
    """A cost model trained on the first records of one source profile (seconds, not minutes)."""
    out = tmp_path_factory.mktemp("costmodel")
    summary = train_cost_model("data/records", out, CostModelConfig(rounds=10, limit=60), ["intel-xeon-avx2-1c"])
    assert summary["records"] > 20 and summary["profiles"] == ["intel-xeon-avx2-1c"]
    return out


def _pool(task_spaces, n=12):
    """matmul-128's TuneContext and ``n`` distinct postprocessed candidates from the prior."""
    context, _, sketches = task_spaces["matmul-128"]
    postprocs = resolved_postprocs(context)
    candidates, keys = [], set()
    for proposal in PriorGenerator().generate(sketches, 8 * n, np.random.default_rng(0)):
        realised = sketches[proposal.sketch_index].realise(proposal.decisions, postprocs)
        key = realised.valid and tvm_ffi.structural_hash(realised.schedule.mod)
        if key and key not in keys and len(candidates) < n:
            keys.add(key)
            sch = realised.schedule
            candidates.append(ms.search_strategy.MeasureCandidate(sch, ArgInfo.from_entry_func(sch.mod, True)))
    assert len(candidates) == n
    return context, candidates


def test_trained_folder_loads_and_refuses_a_broken_one(tiny_cost_model, tmp_path):
    model = Pretrained.load(tiny_cost_model)
    assert model.margin(np.zeros((3, FEATURE_DIM), dtype=np.float32)).shape == (3,)
    assert set(model.sources) == {"intel-xeon-avx2-1c"}
    (tmp_path / "meta.json").write_text("{}")
    with pytest.raises(CostModelError, match="lacks model.json"):
        Pretrained.load(tmp_path)


def test_top_recall_counts_the_best_found():
    labels = np.arange(40, dtype=float)
    assert top_recall(labels, labels) == 1.0
    assert top_recall(labels, -labels) == 0.0


def test_evaluation_judges_a_fresh_metaschedule_xgb_beside_the_model(tiny_cost_model, tmp_path):
    """The offline comparison of issue #15: in-tune learners fit on a task's records of one database
    score the records of another; fit on the very records they score they must rank them, unlike random."""
    reference = tmp_path / "intel-xeon-avx2-2c"
    shutil.copytree("data/reference/intel-xeon-avx2-2c", reference)
    profile, model = get_profile("intel-xeon-avx2-2c"), Pretrained.load(tiny_cost_model)
    database = open_database(reference)
    learners = {"fresh": fresh_xgb, "tuned": lambda: TensorGPTCostModel(tiny_cost_model)}
    groups = record_groups(database, profile, model.standardizer, [], fresh=database, learners=learners)
    assert groups and all(len(s) == len(g.labels) for g in groups for s in g.learned.values())
    rows = evaluate(model, groups)
    chance = np.mean([r["random_spearman"] for r in rows])
    for name in learners:
        learned = np.mean([r[f"{name}_spearman"] for r in rows])
        assert learned > 0.5 and learned > chance + 0.3, name


def test_predictions_are_warm_and_learn_from_measurements(tiny_cost_model, task_spaces):
    """No random phase: the same candidates score the same before any measurement; after the task's
    measurements the residual ranks those measurements in their measured order."""
    model = TensorGPTCostModel(tiny_cost_model)
    context, candidates = _pool(task_spaces)
    first, again = model.predict(context, candidates), model.predict(context, candidates)
    assert np.array_equal(first, again) and np.all((first > 0) & (first < 1))
    latencies = np.linspace(1e-4, 1e-3, len(candidates))
    results = [RunnerResult([float(t)], None) for t in latencies]
    model.update(context, candidates, results)
    after = model.predict(context, candidates)
    ranks_after = np.argsort(np.argsort(-after))
    assert np.corrcoef(ranks_after, np.arange(len(candidates)))[0, 1] > 0.8  # fastest ranked first


def test_features_are_extracted_once_per_module(tiny_cost_model, task_spaces, monkeypatch):
    """A candidate scored again (a carried pool) or learnt from after it was scored takes its
    features from the cache: the same numbers, no second lowering."""
    from tvm_tensorgpt.costmodel import model as cost_model_module
    from tvm_tensorgpt.costmodel.features import candidate_features

    model = TensorGPTCostModel(tiny_cost_model)
    context, candidates = _pool(task_spaces)
    fresh = candidate_features(context, candidates, model.device_vector(context.target))
    assert np.array_equal(model.features(context, candidates[:8]), fresh[:8])
    extracted = []
    real = cost_model_module.candidate_features
    monkeypatch.setattr(cost_model_module, "candidate_features",
                        lambda ctx, cands, hw: extracted.append(len(cands)) or real(ctx, cands, hw))  # fmt: skip
    assert np.array_equal(model.features(context, candidates[::-1]), fresh[::-1])
    assert extracted == [4]  # only the four it had not seen
    model.update(context, candidates[:2], [RunnerResult([1e-3], None)] * 2)
    assert extracted == [4]


def test_unprofiled_device_scores_as_the_mean_device_and_profiled_ones_name_their_neighbour(tiny_cost_model):
    model = TensorGPTCostModel(tiny_cost_model)
    said: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    log = logging.getLogger("tvm_tensorgpt.costmodel.model")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        near = model.device_vector(tvm.target.Target({"kind": "llvm", "mcpu": "znver3", "num-cores": 8}))
        far = model.device_vector(tvm.target.Target({"kind": "llvm", "mcpu": "cortex-a72", "num-cores": 4}))
    finally:
        log.removeHandler(handler)
    assert "nearest source device intel-xeon-avx2-1c" in said[0] and np.any(near != 0)
    assert "scoring it as the mean device" in said[1] and not np.any(far)


@pytest.mark.parametrize("strategy", ["tensorgpt", "evolutionary"])
def test_tune_tir_takes_the_cost_model_name(strategy, llvm_target, tmp_path):
    """cost_model="tensorgpt" in a stock tune_tir: with the TensorGPT strategy and with evolutionary search."""
    if not (DEFAULT_COST_MODEL / "model.json").exists():
        pytest.fail(f"no bundled cost model in {DEFAULT_COST_MODEL}: `tensorgpt costmodel train` makes it")
    database = ms.tune_tir(get_workload("matmul-128").build(), llvm_target, str(tmp_path), max_trials_global=4,
                           num_trials_per_iter=4, strategy=strategy, cost_model="tensorgpt", builder="tensorgpt",
                           space="tensorgpt" if strategy == "tensorgpt" else "post-order-apply",
                           num_tuning_cores=2)  # fmt: skip
    assert len(database.get_all_tuning_records()) == 4
    assert tvm_tensorgpt  # registered on import
