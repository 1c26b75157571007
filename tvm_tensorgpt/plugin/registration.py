"""Make ``"tensorgpt"`` a name MetaSchedule understands, on import.

TVM resolves strategy, space and builder strings in Python, in ``SearchStrategy.create``,
``SpaceGenerator.create`` and ``Builder.create`` (called from ``TuneContext`` and ``tune_tasks``,
so ``tune_tir``, ``tune_tasks`` and ``relax_integration.tune_relax`` all pass through them). We wrap
those three factories: ``"tensorgpt"`` builds this package's class, every stock name keeps working,
and an unknown name raises an error listing the valid ones.

The relax *pass* ``MetaScheduleTuneIRMod`` / ``MetaScheduleTuneTIR`` (used by
``relax.pipeline.static_shape_tuning_pipeline``) calls the global functions
``tvm.s_tir.meta_schedule.tune_relax`` / ``tune_tir`` from C++ with default arguments;
``use_tensorgpt_in_relax_pipeline`` re-registers those globals so that path uses TensorGPT too.
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm.s_tir.meta_schedule import builder as ms_builder
from tvm.s_tir.meta_schedule import relax_integration, tir_integration
from tvm.s_tir.meta_schedule import search_strategy as ms_strategy
from tvm.s_tir.meta_schedule import space_generator as ms_space

NAME = "tensorgpt"
STOCK_STRATEGIES = ("evolutionary", "replay-trace", "replay-func")
STOCK_SPACES = ("post-order-apply", "union")
# SpaceGenerator.create also takes a rule-set name and builds PostOrderApply with it.
STOCK_RULE_SETS = ("llvm", "cuda", "cuda-tensorcore", "hexagon", "from-target")
STOCK_BUILDERS = ("local",)


def _unknown(what: str, kind: Any, valid: tuple[str, ...]) -> ValueError:
    return ValueError(f"Unknown {what}: {kind!r}. Valid names: {', '.join(valid + (NAME,))}")


def _wrap_strategy(stock: Any) -> Any:
    def create(kind: Any = "evolutionary", *args: Any, **kwargs: Any) -> Any:
        if kind == NAME:
            from .strategy import TensorGPTSearchStrategy

            return TensorGPTSearchStrategy(*args, **kwargs)
        if isinstance(kind, str) and kind not in STOCK_STRATEGIES:
            raise _unknown("SearchStrategy", kind, STOCK_STRATEGIES)
        return stock(kind, *args, **kwargs)

    create.__doc__ = stock.__doc__
    create._tensorgpt_stock = stock  # type: ignore[attr-defined]
    return create


def _wrap_space(stock: Any) -> Any:
    def create(kind: Any = "post-order-apply", *args: Any, **kwargs: Any) -> Any:
        if kind == NAME:
            from .space import TensorGPTSpaceGenerator

            return TensorGPTSpaceGenerator(*args, **kwargs)
        if isinstance(kind, str) and kind not in STOCK_SPACES + STOCK_RULE_SETS:
            raise _unknown("SpaceGenerator", kind, STOCK_SPACES + STOCK_RULE_SETS)
        return stock(kind, *args, **kwargs)

    create.__doc__ = stock.__doc__
    create._tensorgpt_stock = stock  # type: ignore[attr-defined]
    return create


def _wrap_builder(stock: Any) -> Any:
    def create(kind: Any = "local", *args: Any, **kwargs: Any) -> Any:
        if kind == NAME:
            from .builder import local_builder

            return local_builder(*args, **kwargs)
        if isinstance(kind, str) and kind not in STOCK_BUILDERS:
            raise _unknown("Builder", kind, STOCK_BUILDERS)
        return stock(kind, *args, **kwargs)

    create.__doc__ = stock.__doc__
    create._tensorgpt_stock = stock  # type: ignore[attr-defined]
    return create


def register() -> None:
    """Install the wrapped factories (idempotent)."""
    targets = (
        (ms_strategy.SearchStrategy, ms_strategy, _wrap_strategy),
        (ms_space.SpaceGenerator, ms_space, _wrap_space),
        (ms_builder.Builder, ms_builder, _wrap_builder),
    )
    for cls, module, wrap in targets:
        if hasattr(cls.create, "_tensorgpt_stock"):
            continue
        wrapped = wrap(cls.create)
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
    from .builder import local_builder

    options = {"strategy": NAME, "space": NAME, "builder": local_builder(), **defaults}

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
