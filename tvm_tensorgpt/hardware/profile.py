"""Hardware profiles: the raw specs a schedule depends on, validated, plus the target to tune for.

A profile is either a CPU (cores, clock, SIMD width, FMA pipes, caches, bandwidth) or a GPU (SMs,
clock, FP32 lanes per SM, thread/shared-memory/register limits, L2, bandwidth, tensor cores,
unified memory). Peak FLOP/s is derived from the specs, so it can never disagree with them. Every
numeric field has a unit and a plausible range: a value outside it (often a unit mix-up, e.g. KB
given where MB is expected) is rejected with the field's name.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Union

# The coarse hardware families (the seed's bucket tokens). The schedule language's vocabulary lists
# them in this order, so the order is part of every checkpoint: append, never reorder.
BUCKETS = ("HW_CPU_X86", "HW_CPU_ARM", "HW_CPU_OTHER", "HW_GPU_DESKTOP", "HW_GPU_HPC", "HW_GPU_EDGE")


class ProfileError(ValueError):
    """A hardware description that cannot be used; the message names the field."""


def _spec(unit: str, low: float, high: float, doc: str) -> Any:
    return field(metadata={"unit": unit, "range": (low, high), "doc": doc})


@dataclass(frozen=True)
class CPUSpecs:
    isa: str = field(metadata={"doc": "x86_64 or aarch64"})
    features: tuple[str, ...] = field(metadata={"doc": "vector ISA features, e.g. sse4.2 avx2 fma avx512f"})
    cores: int = _spec("cores", 1, 512, "cores the tuning uses")
    threads_per_core: int = _spec("threads", 1, 8, "hardware threads per core (SMT)")
    clock_ghz: float = _spec("GHz", 0.2, 6.5, "sustained all-core clock")
    simd_bytes: int = _spec("bytes", 8, 256, "widest vector register the target may use")
    fma_units: int = _spec("pipes", 1, 4, "vector FMA pipes per core")
    l1d_kb: float = _spec("KB", 4, 1024, "L1 data cache per core")
    l2_kb: float = _spec("KB", 64, 65536, "L2 cache per core")
    l3_mb: float = _spec("MB", 0, 2048, "shared L3 cache in total (0 if none)")
    mem_bw_gbs: float = _spec("GB/s", 1, 10000, "DRAM bandwidth")

    @property
    def peak_gflops(self) -> float:
        """Nominal FP32 peak: cores x clock x lanes x 2 (FMA) x pipes."""
        return self.cores * self.clock_ghz * (self.simd_bytes / 4) * 2 * self.fma_units


@dataclass(frozen=True)
class GPUSpecs:
    arch: str = field(metadata={"doc": "CUDA arch, e.g. sm_89"})
    sms: int = _spec("SMs", 1, 1024, "streaming multiprocessors")
    clock_ghz: float = _spec("GHz", 0.2, 3.5, "boost clock")
    cores_per_sm: int = _spec("lanes", 8, 256, "FP32 lanes per SM")
    max_threads_per_block: int = _spec("threads", 32, 2048, "max threads per block")
    warp_size: int = _spec("threads", 8, 128, "warp size")
    smem_per_block_kb: float = _spec("KB", 1, 1024, "shared memory per block (default, not opt-in)")
    smem_per_sm_kb: float = _spec("KB", 1, 1024, "shared memory per SM")
    regs_per_block: int = _spec("registers", 1024, 1 << 20, "32-bit registers per block")
    l2_mb: float = _spec("MB", 0.0625, 1024, "L2 cache in total")
    mem_bw_gbs: float = _spec("GB/s", 1, 20000, "DRAM bandwidth")
    tensor_cores: bool = field(metadata={"doc": "has tensor cores"})
    unified_memory: bool = field(metadata={"doc": "GPU shares DRAM with the CPU (Jetson)"})

    @property
    def peak_gflops(self) -> float:
        """Nominal FP32 peak: SMs x lanes x 2 (FMA) x clock."""
        return self.sms * self.cores_per_sm * 2 * self.clock_ghz


Specs = Union[CPUSpecs, GPUSpecs]


@dataclass(frozen=True)
class HardwareProfile:
    """A device the generator can be told about and tune for."""

    name: str
    kind: str  # "cpu" | "gpu"
    target: dict[str, Any]  # TVM 0.27 JSON target
    specs: Specs
    edge: bool = False  # embedded / mobile part
    hpc: bool = False  # data-centre GPU
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # fields -> document
    machine: str = ""  # the physical machine that measures it (hardware.machine); "" for published devices

    def __post_init__(self) -> None:
        if self.kind not in ("cpu", "gpu"):
            raise ProfileError(f"profile {self.name!r}: kind must be 'cpu' or 'gpu', not {self.kind!r}")
        expected = CPUSpecs if self.kind == "cpu" else GPUSpecs
        if not isinstance(self.specs, expected):
            raise ProfileError(f"profile {self.name!r}: a {self.kind} profile needs {expected.__name__}")
        validate_specs(self.name, self.specs)
        cores = self.target.get("num-cores")
        if isinstance(self.specs, CPUSpecs) and cores is not None and cores != self.specs.cores:
            raise ProfileError(f"profile {self.name!r}: the target's num-cores ({cores}) and specs.cores "
                               f"({self.specs.cores}) disagree; make them the same")  # fmt: skip
        if isinstance(self.specs, GPUSpecs):
            check_gpu_target(self.name, self.target, self.specs)

    @property
    def bucket(self) -> str:
        """The coarse hardware-family token of the schedule language."""
        if self.kind == "gpu":
            return "HW_GPU_EDGE" if self.edge else ("HW_GPU_HPC" if self.hpc else "HW_GPU_DESKTOP")
        return "HW_CPU_ARM" if self.specs.isa == "aarch64" else "HW_CPU_X86"  # type: ignore[union-attr]

    def raw(self) -> dict[str, Any]:
        """The specs as plain values, derived peak included."""
        out = asdict(self.specs)
        if "features" in out:
            out["features"] = list(out["features"])
        out["peak_gflops"] = round(self.specs.peak_gflops, 3)
        return out

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "kind": self.kind, "edge": self.edge, "hpc": self.hpc,
               "target": self.target, "specs": self.raw(), "sources": self.sources}  # fmt: skip
        return out | ({"machine": self.machine} if self.machine else {})


def validate_specs(name: str, specs: Specs) -> None:
    for f in fields(specs):
        value = getattr(specs, f.name)
        if "range" not in f.metadata:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProfileError(f"profile {name!r}: {f.name} must be a number ({f.metadata['unit']}), got {value!r}")
        if math.isnan(value) or math.isinf(value):
            raise ProfileError(f"profile {name!r}: {f.name} is {value}; give a finite number in {f.metadata['unit']}")
        low, high = f.metadata["range"]
        if value < 0:
            raise ProfileError(f"profile {name!r}: {f.name} = {value} is negative")
        if not low <= value <= high:
            raise ProfileError(
                f"profile {name!r}: {f.name} = {value} {f.metadata['unit']} is outside the plausible range "
                f"[{low}, {high}] {f.metadata['unit']} ({f.metadata['doc']}); check the unit"
            )


# CUDA target attribute -> (GPUSpecs field, scale from the field to the attribute's unit)
CUDA_LIMITS = {
    "max_threads_per_block": ("max_threads_per_block", 1),
    "max_shared_memory_per_block": ("smem_per_block_kb", 1024),
    "thread_warp_size": ("warp_size", 1),
    "registers_per_block": ("regs_per_block", 1),
}


def check_gpu_target(name: str, target: dict[str, Any], specs: GPUSpecs) -> None:
    """A GPU profile's target must name its arch and agree with its specs, and so must the TVM
    target tag it names (a tag's limits are what TVM's VerifyGPUCode will use)."""
    if target.get("kind") != "cuda":
        raise ProfileError(f"profile {name!r}: a GPU profile needs a CUDA target, e.g. "
                           f'{{"kind": "cuda", "arch": "{specs.arch}"}}, not {target!r}')  # fmt: skip
    sources = {"target": dict(target)}
    if target.get("tag"):
        import json

        from tvm.target import Target

        try:
            sources[f"tag {target['tag']!r}"] = json.loads(str(Target({"tag": target["tag"]})))
        except Exception as err:  # TVM raises its own error types for an unknown tag
            raise ProfileError(f"profile {name!r}: TVM has no target tag {target['tag']!r} "
                               "(tvm.target.tag.list_tags() lists them)") from err  # fmt: skip
    if not target.get("arch"):  # TVM would quietly take sm_50, even beside a tag
        raise ProfileError(f'profile {name!r}: the CUDA target has no "arch"; add "arch": "{specs.arch}"')
    for where, attrs in sources.items():
        if attrs.get("arch") and attrs["arch"] != specs.arch:
            raise ProfileError(f"profile {name!r}: {where} says arch {attrs['arch']} but the specs say "
                               f"{specs.arch}; make them agree")  # fmt: skip
        for attr, (spec, scale) in CUDA_LIMITS.items():
            if attr in attrs:
                mine = getattr(specs, spec) * scale
                if int(attrs[attr]) != int(mine):
                    raise ProfileError(f"profile {name!r}: {where} says {attr} = {attrs[attr]} but the specs "
                                       f"say {spec} = {getattr(specs, spec)} ({int(mine)}); make them agree")  # fmt: skip


def _build_specs(name: str, kind: str, raw: dict[str, Any]) -> Specs:
    cls = CPUSpecs if kind == "cpu" else GPUSpecs
    names = [f.name for f in fields(cls)]
    missing = [n for n in names if n not in raw]
    if missing:
        raise ProfileError(f"profile {name!r}: missing field(s) {', '.join(missing)} for a {kind}")
    unknown = sorted(set(raw) - set(names) - {"peak_gflops"})
    if unknown:
        raise ProfileError(f"profile {name!r}: unknown field(s) {', '.join(unknown)}; {kind} fields: {', '.join(names)}")
    values = {n: raw[n] for n in names}
    if "features" in values:
        values["features"] = tuple(values["features"])
    for f in fields(cls):
        if f.type in ("bool",) and not isinstance(values[f.name], bool):
            raise ProfileError(f"profile {name!r}: {f.name} must be true or false, got {values[f.name]!r}")
    return cls(**values)


def profile_from_dict(data: dict[str, Any]) -> HardwareProfile:
    """Build and validate a profile from its dict form (``HardwareProfile.to_dict``)."""
    for key in ("name", "kind", "target", "specs"):
        if key not in data:
            raise ProfileError(f"hardware profile is missing {key!r} (needs name, kind, target, specs)")
    name, kind = str(data["name"]), str(data["kind"])
    if kind not in ("cpu", "gpu"):
        raise ProfileError(f"profile {name!r}: kind must be 'cpu' or 'gpu', not {kind!r}")
    if not isinstance(data["target"], dict) or "kind" not in data["target"]:
        raise ProfileError(f"profile {name!r}: target must be a JSON target dict such as "
                           '{"kind": "llvm", "mcpu": "znver3", "num-cores": 8}')  # fmt: skip
    return HardwareProfile(
        name=name,
        kind=kind,
        target=dict(data["target"]),
        specs=_build_specs(name, kind, dict(data["specs"])),
        edge=bool(data.get("edge", False)),
        hpc=bool(data.get("hpc", False)),
        sources={str(k): str(v) for k, v in dict(data.get("sources", {})).items()},
        machine=str(data.get("machine", "")),
    )


def load_profile_file(path: str | Path) -> HardwareProfile:
    """A user's device description, from a .json or .toml file (same keys as ``to_dict``)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise ProfileError(f"{path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {err}") from None
    return profile_from_dict(data)
