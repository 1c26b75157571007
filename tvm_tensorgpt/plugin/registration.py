"""Make ``"tensorgpt"`` a name MetaSchedule understands, on import.

TVM resolves strategy, space, builder and cost-model strings in Python, in
``SearchStrategy.create``, ``SpaceGenerator.create``, ``Builder.create`` and ``CostModel.create``
(called from ``TuneContext``, ``tune_tasks`` and ``tune``, so ``tune_tir``, ``tune_tasks`` and
``relax_integration.tune_relax`` all pass through them). We wrap those factories: ``"tensorgpt"``
builds this package's class, every stock name keeps working, and an unknown name raises an error
listing the valid ones.

The relax *pass* ``MetaScheduleTuneIRMod`` / ``MetaScheduleTuneTIR`` (used by
``relax.pipeline.static_shape_tuning_pipeline``) calls the global functions
``tvm.s_tir.meta_schedule.tune_relax`` / ``tune_tir`` from C++ with default arguments;
``use_tensorgpt_in_relax_pipeline`` re-registers those globals so that path uses TensorGPT too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tvm_ffi
from tvm.s_tir.meta_schedule import builder as ms_builder
from tvm.s_tir.meta_schedule import cost_model as ms_cost_model
from tvm.s_tir.meta_schedule import relax_integration, tir_integration
from tvm.s_tir.meta_schedule import search_strategy as ms_strategy
from tvm.s_tir.meta_schedule import space_generator as ms_space

from ..costmodel import TensorGPTCostModel
from ..tvm_glue import local_builder
from .space import TensorGPTSpaceGenerator
from .strategy import TensorGPTSearchStrategy

NAME = "tensorgpt"
STOCK_STRATEGIES = ("evolutionary", "replay-trace", "replay-func")
STRATEGIES = (NAME, *STOCK_STRATEGIES)  # every strategy name a tune accepts once registered
STOCK_SPACES = ("post-order-apply", "union")
# SpaceGenerator.create also takes a rule-set name and builds PostOrderApply with it.
STOCK_RULE_SETS = ("llvm", "cuda", "cuda-tensorcore", "hexagon", "from-target")
STOCK_BUILDERS = ("local",)
STOCK_COST_MODELS = ("xgb", "mlp", "random", "none")
COST_MODELS = (NAME, *STOCK_COST_MODELS)


def _wrap(stock: Callable[..., Any], what: str, default: str, valid: tuple[str, ...],
          make: Callable[..., Any]) -> Callable[..., Any]:  # fmt: skip
    """A factory that builds ``make(...)`` for "tensorgpt" and defers to ``stock`` otherwise."""

    def create(kind: Any = default, *args: Any, **kwargs: Any) -> Any:
        if kind == NAME:
            return make(*args, **kwargs)
        if isinstance(kind, str) and kind not in valid:
            raise ValueError(f"Unknown {what}: {kind!r}. Valid names: {', '.join(valid + (NAME,))}")
        return stock(kind, *args, **kwargs)

    create.__doc__ = stock.__doc__
    create._tensorgpt_stock = stock  # type: ignore[attr-defined]
    return create


def register() -> None:
    """Install the wrapped factories (idempotent)."""
    targets = (
        (ms_strategy.SearchStrategy, ms_strategy, "evolutionary", STOCK_STRATEGIES, TensorGPTSearchStrategy),
        (ms_space.SpaceGenerator, ms_space, "post-order-apply", STOCK_SPACES + STOCK_RULE_SETS,
         TensorGPTSpaceGenerator),
        (ms_builder.Builder, ms_builder, "local", STOCK_BUILDERS, local_builder),
        (ms_cost_model.CostModel, ms_cost_model, "xgb", STOCK_COST_MODELS, TensorGPTCostModel),
    )  # fmt: skip
    for cls, module, default, valid, make in targets:
        if hasattr(cls.create, "_tensorgpt_stock"):
            continue
        wrapped = _wrap(cls.create, cls.__name__, default, valid, make)
        cls.create = staticmethod(wrapped)
        module.create = wrapped
        # the submodules that define the classes export `create` too
        defining = __import__(cls.__module__, fromlist=["create"])
        if getattr(defining, "create", None) is not None:
            defining.create = wrapped


def use_tensorgpt_in_relax_pipeline(**defaults: Any) -> None:
    """Make relax's MetaSchedule passes tune with TensorGPT and the working builder.

    Call before the pass first runs in this process (C++ looks the globals up once). ``defaults``
    override the injected keyword arguments (``strategy``, ``space``, ``builder``, ...).
    """
    options = {"strategy": NAME, "space": NAME, "builder": local_builder(), "cost_model": NAME, **defaults}

    def tune_relax(
        mod: Any, params: Any, target: Any, work_dir: Any, max_trials_global: Any,
        max_trials_per_task: Any = None, op_names: Any = None,
    ) -> Any:  # fmt: skip
        relax_integration.tune_relax(
            mod, params, target, work_dir, int(max_trials_global),
            max_trials_per_task=None if max_trials_per_task is None else int(max_trials_per_task),
            op_names=op_names, **options,
        )  # fmt: skip
        return mod  # like the stock global: the pass only records tuning decisions

    def tune_tir(mod: Any, target: Any, work_dir: Any, max_trials_global: Any) -> Any:
        tir_integration.tune_tir(mod, target, work_dir, int(max_trials_global), **options)
        return mod

    tvm_ffi.register_global_func("tvm.s_tir.meta_schedule.tune_relax", tune_relax, override=True)
    tvm_ffi.register_global_func("tvm.s_tir.meta_schedule.tune_tir", tune_tir, override=True)
