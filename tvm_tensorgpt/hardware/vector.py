"""The 24-D hardware vector and its standardization.

Each dimension is one function of a profile's specs with a unit and a transform: magnitudes on
log scales, ratios (FLOP per byte, last-level cache per bandwidth, bandwidth per compute unit),
flags. A dimension that only exists for one kind of device is log2(1) = 0 for the other. Raw
vectors of different devices are then standardized per dimension over a *universe* of profiles
(the registry), so constant-ish limits (warp 32, 1024 threads) stop dominating and devices stay
apart. ``Standardizer`` holds the mean/std; a model stores the one it was trained with.
``depends`` lists the spec fields each dimension reads, so what a spec change moves is known.
docs/hardware.md lists the dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .profile import CPUSpecs, GPUSpecs, HardwareProfile

_MATRIX_FEATURES = {"avx512_vnni", "avx512vnni", "avxvnni", "amx_tile", "amx-tile", "dotprod", "i8mm", "sme"}


def _log2(x: float) -> float:
    return math.log2(max(float(x), 1e-9))


def _cpu_isa_level(s: CPUSpecs) -> float:
    """1 SSE4.2 / NEON, 2 AVX / NEON+dotprod, 3 AVX2 / SVE, 4 AVX-512."""
    f = set(s.features)
    if s.isa == "aarch64":
        return 3.0 if "sve" in f else (2.0 if "dotprod" in f else 1.0)
    if s.simd_bytes >= 64:
        return 4.0
    if "avx2" in f:
        return 3.0
    return 2.0 if "avx" in f else 1.0


def _units(p: HardwareProfile) -> int:
    return p.specs.cores if isinstance(p.specs, CPUSpecs) else p.specs.sms


def _lanes(p: HardwareProfile) -> float:
    s = p.specs
    return s.simd_bytes / 4 if isinstance(s, CPUSpecs) else s.warp_size


def _pipes(p: HardwareProfile) -> float:
    s = p.specs
    return s.fma_units if isinstance(s, CPUSpecs) else s.cores_per_sm / s.warp_size


def _llc_mb(p: HardwareProfile) -> float:
    s = p.specs
    if isinstance(s, GPUSpecs):
        return s.l2_mb
    return s.l3_mb if s.l3_mb > 0 else s.l2_kb / 1024


def _cpu(f: Callable[[CPUSpecs], float]) -> Callable[[HardwareProfile], float]:
    return lambda p: f(p.specs) if isinstance(p.specs, CPUSpecs) else 0.0  # type: ignore[arg-type]


def _gpu(f: Callable[[GPUSpecs], float]) -> Callable[[HardwareProfile], float]:
    return lambda p: f(p.specs) if isinstance(p.specs, GPUSpecs) else 0.0  # type: ignore[arg-type]


@dataclass(frozen=True)
class Dimension:
    name: str
    unit: str
    transform: str  # flag | log2 | log10 | ratio (log2 of a ratio) | ordinal
    source: str  # which specs, in words
    depends: tuple[str, ...]  # spec fields read (CPU or GPU), plus "kind"/"edge"
    value: Callable[[HardwareProfile], float]


_PEAK_CPU = ("cores", "clock_ghz", "simd_bytes", "fma_units")
_PEAK_GPU = ("sms", "cores_per_sm", "clock_ghz")
_PEAK = _PEAK_CPU + _PEAK_GPU

DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("is_gpu", "flag", "flag", "profile kind", ("kind",), lambda p: float(p.kind == "gpu")),
    Dimension("is_edge", "flag", "flag", "embedded/mobile part", ("edge",), lambda p: float(p.edge)),
    Dimension("is_arm", "flag", "flag", "CPU ISA is aarch64", ("isa",),
              _cpu(lambda s: float(s.isa == "aarch64"))),
    Dimension("compute_units", "cores | SMs", "log2", "cores used (CPU) or SMs (GPU)", ("cores", "sms"),
              lambda p: _log2(_units(p))),
    Dimension("clock", "GHz", "log2", "clock", ("clock_ghz",), lambda p: _log2(p.specs.clock_ghz)),
    Dimension("vector_lanes", "fp32 lanes", "log2", "SIMD width / 4 bytes (CPU) or warp size (GPU)",
              ("simd_bytes", "warp_size"), lambda p: _log2(_lanes(p))),
    Dimension("fma_pipes_per_unit", "pipes", "log2", "vector FMA pipes per core, or FP32 lanes per SM / warp",
              ("fma_units", "cores_per_sm", "warp_size"), lambda p: _log2(_pipes(p))),
    Dimension("peak_flops", "GFLOP/s", "log10", "derived FP32 peak", _PEAK,
              lambda p: math.log10(p.specs.peak_gflops)),
    Dimension("mem_bandwidth", "GB/s", "log10", "DRAM bandwidth", ("mem_bw_gbs",),
              lambda p: math.log10(p.specs.mem_bw_gbs)),
    Dimension("flop_per_byte", "FLOP/B", "ratio", "peak / bandwidth (machine balance)", _PEAK + ("mem_bw_gbs",),
              lambda p: _log2(p.specs.peak_gflops / p.specs.mem_bw_gbs)),
    Dimension("l1_per_unit", "KB", "log2", "L1d per core (CPU) or shared memory per SM (GPU)",
              ("l1d_kb", "smem_per_sm_kb"),
              lambda p: _log2(p.specs.l1d_kb if isinstance(p.specs, CPUSpecs) else p.specs.smem_per_sm_kb)),
    Dimension("l2_per_unit", "KB", "log2", "L2 per core (CPU) or L2 / SMs (GPU)", ("l2_kb", "l2_mb", "sms"),
              lambda p: _log2(p.specs.l2_kb if isinstance(p.specs, CPUSpecs) else p.specs.l2_mb * 1024 / p.specs.sms)),
    Dimension("last_level_cache", "MB", "log2", "L3 (CPU; L2 per core if none) or L2 (GPU)",
              ("l3_mb", "l2_kb", "l2_mb"), lambda p: _log2(_llc_mb(p))),
    Dimension("llc_per_bandwidth", "us", "ratio", "time to stream the last-level cache from DRAM",
              ("l3_mb", "l2_kb", "l2_mb", "mem_bw_gbs"),
              lambda p: _log2(_llc_mb(p) * 1e-3 / p.specs.mem_bw_gbs * 1e6)),
    Dimension("bandwidth_per_unit", "GB/s", "ratio", "bandwidth per core / SM", ("mem_bw_gbs", "cores", "sms"),
              lambda p: _log2(p.specs.mem_bw_gbs / _units(p))),
    Dimension("flop_per_cycle_per_unit", "FLOP/cycle", "log2", "2 x lanes x pipes = peak / (units x clock)",
              ("simd_bytes", "fma_units", "cores_per_sm"), lambda p: _log2(2 * _lanes(p) * _pipes(p))),
    Dimension("smt_threads", "threads", "log2", "hardware threads per core (CPU only)", ("threads_per_core",),
              _cpu(lambda s: _log2(s.threads_per_core))),
    Dimension("register_file", "KB", "log2", "vector registers x width per core (CPU) or registers per block (GPU)",
              ("simd_bytes", "isa", "regs_per_block"),
              lambda p: _log2((32 if p.specs.simd_bytes >= 64 or p.specs.isa == "aarch64" else 16)
                              * p.specs.simd_bytes / 1024) if isinstance(p.specs, CPUSpecs)
              else _log2(p.specs.regs_per_block * 4 / 1024)),
    Dimension("max_threads_per_block", "threads", "log2", "GPU only", ("max_threads_per_block",),
              _gpu(lambda s: _log2(s.max_threads_per_block))),
    Dimension("smem_per_block", "KB", "log2", "GPU only", ("smem_per_block_kb",),
              _gpu(lambda s: _log2(s.smem_per_block_kb))),
    Dimension("isa_generation", "level", "ordinal",
              "CPU vector ISA level (1 SSE4.2/NEON .. 4 AVX-512) or GPU compute capability",
              ("features", "simd_bytes", "isa", "arch"),
              lambda p: _cpu_isa_level(p.specs) if isinstance(p.specs, CPUSpecs)
              else float(p.specs.arch.removeprefix("sm_")) / 10),
    Dimension("matrix_unit", "flag", "flag", "tensor cores (GPU) or int8 dot-product/matrix ISA (CPU)",
              ("features", "tensor_cores"),
              lambda p: float(bool(set(p.specs.features) & _MATRIX_FEATURES)) if isinstance(p.specs, CPUSpecs)
              else float(p.specs.tensor_cores)),
    Dimension("unified_memory", "flag", "flag", "compute shares DRAM with the host CPU (CPUs: yes)",
              ("kind", "unified_memory"),
              lambda p: 1.0 if isinstance(p.specs, CPUSpecs) else float(p.specs.unified_memory)),
    Dimension("total_fma_lanes", "lanes", "log2", "units x lanes x pipes",
              ("cores", "simd_bytes", "fma_units", "sms", "cores_per_sm"),
              lambda p: _log2(_units(p) * _lanes(p) * _pipes(p))),
)  # fmt: skip

VECTOR_DIM = len(DIMENSIONS)
assert VECTOR_DIM == 24, "the hardware vector has 24 dimensions"


def raw_vector(profile: HardwareProfile) -> np.ndarray:
    return np.array([d.value(profile) for d in DIMENSIONS], dtype=np.float64)


@dataclass(frozen=True)
class Standardizer:
    """Per-dimension (x - mean) / std over a universe of profiles; std 0 becomes 1."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def fit(cls, profiles: Sequence[HardwareProfile]) -> Standardizer:
        if not profiles:
            raise ValueError("cannot standardize over an empty set of profiles")
        raw = np.stack([raw_vector(p) for p in profiles])
        std = raw.std(axis=0)
        std[std < 1e-9] = 1.0
        return cls(tuple(raw.mean(axis=0).tolist()), tuple(std.tolist()))

    def __call__(self, profile: HardwareProfile) -> np.ndarray:
        return (raw_vector(profile) - np.array(self.mean)) / np.array(self.std)

    def to_dict(self) -> dict:
        return {"dimensions": [d.name for d in DIMENSIONS], "mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, data: dict) -> Standardizer:
        names = [d.name for d in DIMENSIONS]
        if data.get("dimensions") != names:
            raise ValueError(f"standardizer was made for dimensions {data.get('dimensions')}, this package has {names}")
        if len(data["mean"]) != VECTOR_DIM or len(data["std"]) != VECTOR_DIM:
            raise ValueError(f"standardizer needs {VECTOR_DIM} means and stds")
        mean, std = np.asarray(data["mean"], dtype=float), np.asarray(data["std"], dtype=float)
        if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
            raise ValueError("standardizer has a NaN/infinite mean or a std that is not positive "
                             f"(std {[round(x, 4) for x in std.tolist()]}); its vectors would be NaN")  # fmt: skip
        return cls(tuple(map(float, mean)), tuple(map(float, std)))


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of ``a`` with every row of ``b`` (how alike two devices look
    to the model, on standardized vectors)."""
    a = a / (np.linalg.norm(a, axis=1, keepdims=True) + 1e-12)
    b = b / (np.linalg.norm(b, axis=1, keepdims=True) + 1e-12)
    return a @ b.T
