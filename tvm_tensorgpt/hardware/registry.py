"""The device registry: published devices (data/devices.json) and this machine's host profiles.

Host profiles are the devices this project can measure for real on one x86 box: this CPU as
detected (``host``) and variants of it that differ in vector ISA (SSE4.2 via LLVM's ``nehalem``,
AVX2 via ``core-avx2``) and in cores (1 or 2, enforced in the runner too, see runner.py). Only
variants the machine can run are listed (``data.split`` says which one is held out).
"""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from importlib import resources

from ..tvm_glue import host_target
from .detect import detect_host, host_variant
from .profile import HardwareProfile, ProfileError, profile_from_dict
from .vector import Standardizer

_HOST_VARIANTS = (("sse42", "nehalem", 16), ("avx2", "core-avx2", 32))
_HOST_SOURCE = {"specs": "detected from /proc/cpuinfo and /sys/devices/system/cpu; mem_bw_gbs measured "
                         "(numpy copy, single stream); fma_units assumed from the vector ISA"}  # fmt: skip


@lru_cache(maxsize=1)
def published_profiles() -> tuple[HardwareProfile, ...]:
    text = resources.files("tvm_tensorgpt.hardware").joinpath("data/devices.json").read_text(encoding="utf-8")
    return tuple(profile_from_dict(d) for d in json.loads(text)["devices"])


@lru_cache(maxsize=1)
def host_profiles() -> tuple[HardwareProfile, ...]:
    specs, model = detect_host()
    sources = {**_HOST_SOURCE, "model": model}
    out = [HardwareProfile("host", "cpu", host_target(specs.cores), specs, sources=sources)]
    if specs.isa != "x86_64":
        return tuple(out)
    for label, mcpu, width in _HOST_VARIANTS:
        if width > specs.simd_bytes:
            continue
        for cores in sorted({1, min(2, specs.cores)}):
            variant = host_variant(specs, width, cores)
            target = {"kind": "llvm", "mcpu": mcpu, "num-cores": cores}
            out.append(HardwareProfile(f"host-{label}-{cores}c", "cpu", target, variant, sources=sources))
    return tuple(out)


def all_profiles() -> list[HardwareProfile]:
    return [*published_profiles(), *host_profiles()]


def get_profile(name: str) -> HardwareProfile:
    profiles = {p.name: p for p in all_profiles()}
    if name in profiles:
        return profiles[name]
    close = difflib.get_close_matches(name, profiles, n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise ProfileError(f"unknown device {name!r}.{hint} Known devices: {', '.join(profiles)}")


def universe_standardizer() -> Standardizer:
    """Standardization over every registry profile (the "universe" the model sees)."""
    return Standardizer.fit(all_profiles())
