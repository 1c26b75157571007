"""`import tvm_tensorgpt` makes "tensorgpt" a MetaSchedule name; stock names keep working."""

import pytest
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import LocalBuilder

import tvm_tensorgpt
from tvm_tensorgpt.plugin.builder import build_module


def test_strategy_and_space_resolve_to_the_plugin():
    assert isinstance(ms.SearchStrategy.create("tensorgpt"), tvm_tensorgpt.TensorGPTSearchStrategy)
    assert isinstance(ms.search_strategy.create("tensorgpt"), tvm_tensorgpt.TensorGPTSearchStrategy)
    assert isinstance(ms.SpaceGenerator.create("tensorgpt"), tvm_tensorgpt.TensorGPTSpaceGenerator)
    builder = ms.Builder.create("tensorgpt", max_workers=1)
    assert isinstance(builder, LocalBuilder) and builder._inst.f_build is build_module


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
