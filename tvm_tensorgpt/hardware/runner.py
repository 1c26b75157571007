"""Runners that enforce a CPU profile's core count, not only announce it in the target.

``num-cores`` in an llvm target only shapes the schedules (parallel extents); the runtime would
still use every core. The runner's worker is pinned to the profile's number of CPUs and its TVM
thread pool sized to match, so a 1-core profile is measured on one core.
"""

from __future__ import annotations

import functools
import os

from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, LocalRunner

from .profile import CPUSpecs, HardwareProfile


def pin_to_cores(cores: int) -> None:
    """Worker initializer: use ``cores`` CPUs (affinity) and as many TVM runtime threads."""
    os.environ["TVM_NUM_THREADS"] = str(cores)
    available = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, set(available[:cores]))


def local_runner(profile: HardwareProfile, evaluator_config: EvaluatorConfig | None = None,
                 timeout_sec: float = 30) -> LocalRunner:  # fmt: skip
    """A LocalRunner for a CPU profile, its worker limited to the profile's cores."""
    if not isinstance(profile.specs, CPUSpecs):
        raise ValueError(f"{profile.name} is a GPU profile; measure it with an RPC runner on the device")
    available = len(os.sched_getaffinity(0))
    if profile.specs.cores > available:
        raise ValueError(f"{profile.name} needs {profile.specs.cores} cores, this machine offers {available}")
    return LocalRunner(
        timeout_sec=timeout_sec,
        evaluator_config=evaluator_config,
        initializer=functools.partial(pin_to_cores, profile.specs.cores),
    )
