"""A LocalBuilder that works out of the box on small machines.

The stock ``LocalBuilder`` imports ``tvm.s_tir.tensor_intrin`` (17-50 s here, every backend's
intrinsics) inside a 30 s build timeout, so builds time out. Building a scheduled module does not
need those registrations — tensorized code already holds the intrinsic bodies — so
``build_module`` is the stock build without that import.

It also starts fresh worker processes for every batch (and one more for a sanity check when it is
created), each paying ``import tvm`` (~6 s here): collecting 16 trials per task spent most of its
time starting workers. ``PooledBuilder`` keeps its workers for its lifetime and recycles each one
after ``recycle_after`` builds instead (TVM restarts per batch because workers leak memory over
many builds). ``Builder.create("tensorgpt")`` and the plugin's tuning paths use it.
"""

from __future__ import annotations

from tvm.ir import IRModule
from tvm.ir.utils import derived_object
from tvm.runtime import Module
from tvm.s_tir.meta_schedule.builder import BuilderInput, BuilderResult, LocalBuilder
from tvm.s_tir.meta_schedule.builder.local_builder import _serialize_params, _worker_func
from tvm.s_tir.meta_schedule.utils import get_global_func_with_default_on_worker
from tvm.support.popen_pool import PopenPoolExecutor, StatusKind
from tvm.target import Target

DEFAULT_TIMEOUT_S = 60.0
RECYCLE_AFTER = 256  # builds per worker process before it is replaced (bounds the workers' leak)


def build_module(mod: IRModule, target: Target, params: dict | None) -> Module:
    """``default_build`` without importing every backend's tensor intrinsics."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    if params:
        raise ValueError("build_module does not bind params; MetaSchedule tasks have none")
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


@derived_object
class PooledBuilder(LocalBuilder._cls):  # type: ignore[name-defined]
    """``LocalBuilder`` with ``build_module`` and worker processes kept across batches."""

    def __init__(self, max_workers: int | None = None, timeout_sec: float = DEFAULT_TIMEOUT_S,
                 recycle_after: int = RECYCLE_AFTER) -> None:  # fmt: skip
        self._pool: PopenPoolExecutor | None = None
        self.recycle_after = recycle_after
        super().__init__(max_workers=max_workers, timeout_sec=timeout_sec, f_build=build_module)

    def _workers(self) -> PopenPoolExecutor:
        if self._pool is None:
            self._pool = PopenPoolExecutor(max_workers=self.max_workers, timeout=self.timeout_sec,
                                           maximum_process_uses=self.recycle_after)  # fmt: skip
        return self._pool

    def _sanity_check(self) -> None:
        """The stock check (the build and export functions resolve in a worker), in the kept pool,
        so that it warms the pool instead of starting one of its own."""
        f_build, f_export = self.f_build, self.f_export

        def check() -> None:
            get_global_func_with_default_on_worker(f_build, None)
            get_global_func_with_default_on_worker(f_export, None)

        self._workers().submit(check).result()

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        jobs = [(self.f_build, self.f_export, b.mod, b.target, _serialize_params(b.params)) for b in build_inputs]
        results = []
        for done in self._workers().map_with_error_catching(lambda job: _worker_func(*job), jobs):
            if done.status == StatusKind.COMPLETE:
                results.append(BuilderResult(done.value, None))
            elif done.status == StatusKind.TIMEOUT:
                results.append(BuilderResult(None, f"LocalBuilder: Timeout, killed after {self.timeout_sec} seconds"))
            else:
                results.append(BuilderResult(None, f"LocalBuilder: An exception occurred\n{done.value}"))
        return results

    def __del__(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)


def local_builder(max_workers: int | None = None, timeout_sec: float = DEFAULT_TIMEOUT_S) -> PooledBuilder:
    """The builder to pass as ``builder=`` to any MetaSchedule tune: ``build_module``, kept workers."""
    return PooledBuilder(max_workers=max_workers, timeout_sec=timeout_sec)
