"""Detection: this machine's CPU from the OS, and a profile for a TVM target.

Host facts come from /proc/cpuinfo (model, flags, clock) and /sys/devices/system/cpu (caches);
DRAM bandwidth cannot be read from the OS, so it is measured once per machine with a numpy copy
(single stream) and cached in ~/.cache/tvm_tensorgpt. The number of vector FMA pipes is not
visible either: 2 for AVX2/AVX-512 x86 cores (Haswell and later, Zen 2 and later), else 1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from ..plugin.target import TargetLike, parse_target
from .profile import CPUSpecs, GPUSpecs, HardwareProfile, ProfileError

# LLVM x86 CPU names by the widest vector ISA they enable.
_X86_SSE42 = {"nehalem", "westmere", "x86-64-v2", "silvermont", "goldmont", "btver2"}
_X86_AVX = {"sandybridge", "ivybridge", "corei7-avx", "core-avx-i", "bdver1"}
_X86_AVX2 = {"haswell", "core-avx2", "broadwell", "skylake", "x86-64-v3", "znver1", "znver2", "znver3",
             "alderlake", "raptorlake", "meteorlake", "bdver4"}  # fmt: skip
_X86_AVX512 = {"skylake-avx512", "cascadelake", "cooperlake", "icelake-server", "icelake-client",
               "sapphirerapids", "x86-64-v4", "rocketlake", "tigerlake", "znver4", "znver5",
               "graniterapids", "emeraldrapids"}  # fmt: skip
_ISA_FEATURES = {
    16: ("sse4.2",),
    32: ("sse4.2", "avx", "avx2", "fma"),
    64: ("sse4.2", "avx", "avx2", "fma", "avx512f"),
}


def _cpuinfo() -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                out.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return out


def _cache_kb(level: int, kind: str) -> tuple[float, int]:
    """(size in KB, number of CPUs sharing it) of cpu0's cache at ``level``."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() not in kind:
                continue
            size = (index / "size").read_text().strip()
            shared = (index / "shared_cpu_list").read_text().strip()
        except OSError:
            continue
        kb = float(size[:-1]) * (1024 if size.endswith("M") else 1) if size[-1] in "KM" else float(size) / 1024
        sharing = sum(int(b) - int(a) + 1 if "-" in part else 1 for part in shared.split(",")
                      for a, _, b in [part.partition("-")] if part)  # fmt: skip
        return kb, max(sharing, 1)
    return 0.0, 1


def measure_bandwidth_gbs(megabytes: int = 256, repeats: int = 5) -> float:
    """Single-stream copy bandwidth (read + write bytes / best time)."""
    src = np.ones(megabytes * (1 << 20) // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.nbytes / best / 1e9


def _cached_bandwidth(key: str) -> float:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tvm_tensorgpt" / "host.json"
    try:
        data = json.loads(cache.read_text())
        if data.get("key") == key:
            return float(data["mem_bw_gbs"])
    except (OSError, ValueError, KeyError):
        pass
    value = round(measure_bandwidth_gbs(), 1)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "mem_bw_gbs": value, "how": "numpy copy, single stream"}))
    except OSError:
        pass
    return value


def detect_host() -> tuple[CPUSpecs, str]:
    """(specs of this machine's CPU, its model name)."""
    info = _cpuinfo()
    flags = set(info.get("flags", info.get("Features", "")).split())
    machine = platform.machine()
    isa = "aarch64" if machine in ("aarch64", "arm64") else "x86_64"
    if isa == "aarch64":
        simd, features = 16, tuple(sorted({"asimd", "dotprod", "sve", "i8mm"} & flags))
    else:
        simd = 64 if "avx512f" in flags else (32 if "avx2" in flags or "avx" in flags else 16)
        known = {"sse4_2": "sse4.2", "avx": "avx", "avx2": "avx2", "fma": "fma", "avx512f": "avx512f",
                 "avx512_vnni": "avx512_vnni", "avx_vnni": "avxvnni", "amx_tile": "amx_tile"}  # fmt: skip
        features = tuple(v for k, v in known.items() if k in flags)
    physical = psutil.cpu_count(logical=False) or 1
    logical = psutil.cpu_count(logical=True) or physical
    mhz = float(info.get("cpu MHz", 0) or 0)
    if not mhz:
        freq = psutil.cpu_freq()
        mhz = freq.max or freq.current if freq else 2000.0
    l1, _ = _cache_kb(1, "Data Unified")
    l2, l2_shared = _cache_kb(2, "Unified Data")
    l3, _ = _cache_kb(3, "Unified")
    model = info.get("model name", machine)
    key = hashlib.sha1(f"{model}|{sorted(flags)}|{physical}".encode()).hexdigest()[:16]
    specs = CPUSpecs(
        isa=isa,
        features=features,
        cores=physical,
        threads_per_core=max(1, logical // physical),
        clock_ghz=round(mhz / 1000, 3),
        simd_bytes=simd,
        fma_units=2 if simd >= 32 else 1,
        l1d_kb=l1 or 32,
        l2_kb=(l2 / l2_shared if l2 else 256),
        l3_mb=round(l3 / 1024, 3),
        mem_bw_gbs=_cached_bandwidth(key),
    )
    return specs, model


def x86_vector_bytes(mcpu: str | None, mattr: list[str] | tuple[str, ...] = ()) -> int | None:
    """Widest vector an LLVM x86 target uses, from its mcpu and mattr (None if unknown)."""
    width = None
    for names, bytes_ in ((_X86_SSE42, 16), (_X86_AVX, 32), (_X86_AVX2, 32), (_X86_AVX512, 64)):
        if mcpu in names:
            width = bytes_
    for attr in mattr:
        if attr in ("+avx512f",):
            width = 64
        elif attr in ("-avx512f",) and width == 64:
            width = 32
        elif attr in ("+avx2", "+avx") and (width or 0) < 32:
            width = 32
        elif attr in ("-avx", "-avx2") and (width or 0) > 16:
            width = 16
    return width


def host_variant(base: CPUSpecs, simd_bytes: int, cores: int) -> CPUSpecs:
    """This machine restricted to a vector width and a core count (a host profile)."""
    features = _ISA_FEATURES[simd_bytes]
    if simd_bytes == 64:
        features = tuple(dict.fromkeys(features + tuple(f for f in base.features if f.startswith(("avx512", "amx")))))
    return dataclasses.replace(
        base, features=features, simd_bytes=simd_bytes, cores=cores, fma_units=2 if simd_bytes >= 32 else 1
    )


def profile_from_target(target: TargetLike, known: list[HardwareProfile] | None = None) -> HardwareProfile:
    """The profile a tuning for ``target`` should use.

    llvm: a registry profile with the same mcpu (its core count taken from the target), else this
    machine's CPU restricted to the target's vector width and cores when the mcpu is an x86 name
    LLVM knows. cuda: the registry GPU with the target's arch, its limits taken from the target.
    """
    from .registry import all_profiles

    given = json.loads(target) if isinstance(target, str) and target.strip().startswith("{") else target
    if isinstance(given, dict) and given.get("kind") == "cuda" and not given.get("arch"):
        # TVM would quietly fill in sm_50; a profile needs the real device
        _cuda_profile({}, [p for p in (known or all_profiles()) if p.kind == "gpu"])
    parsed = parse_target(target)
    data: dict[str, Any] = json.loads(str(parsed))
    profiles = known if known is not None else all_profiles()
    kind = parsed.kind.name
    if kind == "cuda":
        return _cuda_profile(data, [p for p in profiles if p.kind == "gpu"])
    if kind != "llvm":
        raise ProfileError(f"no hardware profile for target kind {kind!r}: llvm (CPU) and cuda (GPU) are supported")
    mcpu, cores, mattr = data.get("mcpu"), data.get("num-cores"), list(data.get("mattr", []))
    cpus = [p for p in profiles if p.kind == "cpu"]
    for p in cpus:
        if p.target.get("mcpu") == mcpu and list(p.target.get("mattr", [])) == mattr and \
                (cores is None or p.target.get("num-cores") == cores):  # fmt: skip
            return p
    for p in cpus:
        if p.target.get("mcpu") == mcpu and not mattr and not p.name.startswith("host"):
            specs = dataclasses.replace(p.specs, cores=int(cores or p.specs.cores))  # type: ignore[arg-type]
            return dataclasses.replace(p, name=f"{p.name}-{specs.cores}c", target=data, specs=specs)
    width = x86_vector_bytes(mcpu, mattr)
    host = next((p for p in cpus if p.name == "host"), None)
    if width is not None and host is not None:
        base: CPUSpecs = host.specs  # type: ignore[assignment]
        specs = host_variant(base, min(width, base.simd_bytes), int(cores or base.cores))
        return HardwareProfile(f"host-{mcpu}-{specs.cores}c", "cpu", data, specs, sources=host.sources)
    names = ", ".join(sorted({str(p.target.get("mcpu")) for p in cpus}))
    raise ProfileError(
        f"no hardware profile for llvm target with mcpu={mcpu!r}: known CPUs have mcpu {names}, and x86 "
        "names LLVM knows map onto this machine. For another device, describe it in a JSON or TOML file "
        "(name, kind, target, specs: cores, clock_ghz, simd_bytes, fma_units, caches, mem_bw_gbs; see "
        "docs/hardware.md) and load it with tvm_tensorgpt.hardware.load_profile_file"
    )


def _cuda_profile(data: dict[str, Any], gpus: list[HardwareProfile]) -> HardwareProfile:
    arch = data.get("arch")
    known = ", ".join(f"{p.specs.arch} ({p.name})" for p in gpus)  # type: ignore[union-attr]
    if not arch:
        raise ProfileError(f'CUDA target has no "arch"; add one, e.g. "arch": "sm_87". Known: {known}')
    base = next((p for p in gpus if p.specs.arch == arch), None)  # type: ignore[union-attr]
    if base is None:
        raise ProfileError(f"no GPU profile for arch {arch!r}; known: {known}. Describe the device in a "
                           "JSON or TOML file (see docs/hardware.md)")  # fmt: skip
    specs: GPUSpecs = base.specs  # type: ignore[assignment]
    limits = {
        "max_threads_per_block": data.get("max_threads_per_block", specs.max_threads_per_block),
        "warp_size": data.get("thread_warp_size", specs.warp_size),
        "smem_per_block_kb": data.get("max_shared_memory_per_block", specs.smem_per_block_kb * 1024) / 1024,
        "regs_per_block": data.get("registers_per_block", specs.regs_per_block),
    }
    if all(getattr(specs, k) == v for k, v in limits.items()):
        return dataclasses.replace(base, target=data)
    return dataclasses.replace(base, name=f"{base.name}-custom", target=data, specs=dataclasses.replace(specs, **limits))
