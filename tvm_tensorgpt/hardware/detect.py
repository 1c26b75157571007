"""Detection: this machine's CPU from the OS, and its variants by vector ISA and cores.

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

import numpy as np
import psutil

from .profile import CPUSpecs

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


def cpu_identity() -> tuple[str, int, int]:
    """(vendor, family, model) of this CPU: what tells two physical machines apart."""
    info = _cpuinfo()
    try:
        return info.get("vendor_id", platform.machine()), int(info.get("cpu family", 0)), int(info.get("model", 0))
    except ValueError:  # e.g. ARM's "model" lines are not numbers
        return info.get("vendor_id", platform.machine()), 0, 0


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
