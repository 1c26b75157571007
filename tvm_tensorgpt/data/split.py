"""The held-out split, in one place: what never provides training data.

The seed holds out a device and a set of representative subgraphs, and evaluates on them only.
Here the held-out CPU is ``HELDOUT_HOST`` (an AMD EPYC Zen 3 host profile playing the seed's
held-out Ryzen, Zen 3 as well): no training record comes from its machine and vector ISA (any core
count). The machines this project runs on change between sessions, so each machine that trains
may also hold out one ISA of its own (``HELDOUT_HOSTS``): a benchmark then runs on whichever held-out
profile belongs to the machine it is on. ``intel-xeon-native-2c`` (AVX-512; the Intel records are
SSE4.2 and AVX2) and ``amd-zen5-avx2-2c`` (the Zen 5 records are AVX-512) are weaker tests than
Zen 3: the generator has experts of those machines' other ISAs. The held-out GPU is ``HELDOUT_GPU`` (no validity labels are made for it), the held-out
tasks ``HELDOUT_TASKS``; every other task (of the networks and the training-only kernels) trains.
"""

from __future__ import annotations

from pathlib import Path

from ..hardware import HardwareProfile, ProfileError, get_profile
from ..workloads.tasks import Task, get_task, load_tasks

HELDOUT_HOST = "amd-zen3-avx2-2c"
HELDOUT_HOSTS = (HELDOUT_HOST, "intel-xeon-native-2c", "amd-zen5-avx2-2c")
HELDOUT_GPU = "jetson-orin"
# The representative subgraphs (>= 12, spanning the operator kinds): tuned by the benchmarks.
HELDOUT_TASKS = (
    "resnet50/fused_conv2d12_subtract7_divide7_multiply7_add13_relu7",  # 3x3 conv 256->256, 28x28
    "resnet18/fused_conv2d_subtract_divide_multiply_add1_relu",  # 7x7 stem conv, stride 2
    "mobilenetv2/fused_conv2d4_subtract3_divide3_multiply3_add6_tir_clip2",  # depthwise 3x3, 56x56
    "mobilenetv2/fused_conv2d23_subtract14_divide14_multiply14_add27_tir_clip9",  # depthwise 3x3, 7x7
    "r3d18/fused_conv3d6_subtract2_divide2_multiply2_add7_relu2",  # 3x3x3 conv3d, 256 ch
    "r3d18/fused_conv3d9_subtract3_divide3_multiply3_add10_relu3",  # 3x3x3 conv3d, 512 ch
    "bert/fused_matmul_add",  # dense: QKV projection 128x768 -> 2304
    "bert/fused_matmul4_add3",  # dense: FFN 768 -> 3072
    "bert/matmul1",  # batch_matmul: Q K^T
    "bert/matmul2",  # batch_matmul: attention x V
    "bert/fused_softmax_broadcast_to2",  # reduction: softmax
    "bert/layer_norm",  # reduction: layer norm
    "densenet121/fused_subtract6_divide6_multiply6_add12_relu6",  # fused elementwise: BN + ReLU
    "resnet50/mean",  # reduction: global average pool
)


def training_tasks() -> list[Task]:
    """Every task but the held-out ones, networks interleaved (so a partial pass covers all five)."""
    by_network: dict[str, list[Task]] = {}
    for task in load_tasks():
        if task.name not in HELDOUT_TASKS:
            by_network.setdefault(task.name.split("/", 1)[0], []).append(task)
    queues = list(by_network.values())
    out: list[Task] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def heldout_tasks() -> list[Task]:
    return [get_task(name) for name in HELDOUT_TASKS]


def is_heldout(profile: HardwareProfile | str) -> bool:
    """The held-out GPU, or a CPU profile with the machine and vector ISA of a held-out host."""
    if isinstance(profile, str):
        if profile in (*HELDOUT_HOSTS, HELDOUT_GPU):
            return True
        try:
            profile = get_profile(profile)
        except ProfileError:
            return False  # a user's own device: never part of the split
    return profile.name in (*HELDOUT_HOSTS, HELDOUT_GPU) or profile.kind == "cpu" and any(
        profile.machine == held.machine and profile.specs.simd_bytes == held.specs.simd_bytes
        for held in map(get_profile, HELDOUT_HOSTS)
    )


def heldout_host_of(machine: str) -> str | None:
    """The held-out CPU profile measured on ``machine`` (a machine key), if it has one."""
    return next((name for name in HELDOUT_HOSTS if get_profile(name).machine == machine), None)


def heldout_reason(profile: HardwareProfile | str) -> str:
    """Why ``profile`` (a held-out one) is held out, for the errors that refuse it."""
    name = profile if isinstance(profile, str) else profile.name
    return f"{name} is held out (machine and vector ISA of {' or '.join(HELDOUT_HOSTS)}, or {HELDOUT_GPU})"


def check_not_heldout(profile: HardwareProfile | str) -> None:
    """Refuse a held-out profile as a source of training data."""
    if is_heldout(profile):
        raise ValueError(f"{heldout_reason(profile)}: it never provides training data")


def source_profiles(data_dir: str | Path, profiles: list[str] | None = None) -> list[str]:
    """The profiles under ``data_dir`` that train: ``profiles`` if given (a held-out one is refused),
    else every profile folder there that is not held out."""
    names = profiles or sorted(p.name for p in Path(data_dir).iterdir() if p.is_dir() and not is_heldout(p.name))
    for name in names:
        check_not_heldout(name)
    return names
