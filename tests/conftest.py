"""Shared fixtures: a CPU target, design spaces of the built-in workloads (computed once), tiny networks."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TVM_NUM_THREADS", "1")

import tvm  # noqa: E402
from tvm.s_tir import meta_schedule as ms  # noqa: E402

import tvm_tensorgpt  # noqa: E402,F401  (registers "tensorgpt")
from tvm_tensorgpt.hardware import this_machine  # noqa: E402
from tvm_tensorgpt.language import Sketch  # noqa: E402
from tvm_tensorgpt.model import ModelConfig, TensorGPTNetwork  # noqa: E402
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics  # noqa: E402
from tvm_tensorgpt.workloads import get_workload  # noqa: E402

LLVM = {"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2}
torch.set_num_threads(1)  # one torch thread beside TVM's workers


TINY = ModelConfig(hidden=32, layers=2, heads=2, intermediate=64, prefix_slots=3, prefix_hidden=16)
EXPERTS = ModelConfig(**{**TINY.to_dict(), "experts": ("intel-xeon-avx2-1c", "intel-xeon-sse42-2c", "intel-xeon-sse42-1c")})
# Profiles of the machine running the tests (collection refuses another machine's), e.g. amd-zen3-sse42-1c
HERE_SSE_1C = f"{this_machine().key}-sse42-1c"
HERE_AVX2_2C = f"{this_machine().key}-avx2-2c"
LANGUAGE_WORKLOADS = ["matmul-128", "conv2d-resnet", "depthwise-mobilenet", "softmax-bert", "layernorm-bert"]


@pytest.fixture(scope="session")
def llvm_target() -> tvm.target.Target:
    target = tvm.target.Target(LLVM)
    load_tensor_intrinsics(target)
    return target


def make_context(mod: tvm.IRModule, target: tvm.target.Target, strategy="replay-trace") -> ms.TuneContext:
    return ms.TuneContext(
        mod=mod,
        target=target,
        space_generator="tensorgpt",
        search_strategy=strategy,
        num_threads=1,
        rand_state=1,
    )


@pytest.fixture(scope="session")
def task_spaces(llvm_target):
    """workload name -> (TuneContext, design spaces, sketches)."""
    out = {}
    for name in LANGUAGE_WORKLOADS:
        context = make_context(get_workload(name).build(), llvm_target)
        spaces = list(context.generate_design_space())
        out[name] = (context, spaces, [Sketch.from_schedule(context.mod, s) for s in spaces])
    return out


def tiny_net(config: ModelConfig = TINY) -> TensorGPTNetwork:
    """A small, seeded, untrained network (eval mode)."""
    torch.manual_seed(0)
    return TensorGPTNetwork(config).eval()


def expert_net(config: ModelConfig = EXPERTS) -> TensorGPTNetwork:
    """``tiny_net`` with experts whose LoRA weights are not zero."""
    net = tiny_net(config)
    with torch.no_grad():  # peft starts lora_B at zero; give the experts something to say
        for name, param in net.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    return net


def record_lines(work_dir) -> list[str]:
    """The tuning-record lines of a MetaSchedule JSON database directory."""
    path = work_dir / "database_tuning_record.json"
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def kill_when_recorded(command: list[str], work_dir, lines: int, timeout: float = 300) -> list[str]:
    """Start ``command``, SIGKILL its process group once ``work_dir`` holds ``lines`` records; the
    records it left."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + timeout
    while len(record_lines(work_dir)) < lines and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return record_lines(work_dir)
