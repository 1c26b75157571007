"""Which hardware profile a TVM target means (the device a tuning grounds its proposals in)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..tvm_glue import TargetLike, parse_target
from .detect import host_variant, x86_vector_bytes
from .machine import this_machine
from .profile import CUDA_LIMITS, GPUSpecs, HardwareProfile, ProfileError
from .registry import all_profiles


def profile_from_target(target: TargetLike, known: list[HardwareProfile] | None = None) -> HardwareProfile:
    """The profile a tuning for ``target`` should use.

    llvm: a registry profile with the same mcpu and cores (this machine's first: a target is tuned
    where it runs), else a published CPU with that mcpu (its core count taken from the target),
    else this machine's CPU restricted to the target's vector width and cores when the mcpu is an
    x86 name LLVM knows. cuda: the registry GPU with the target's arch, its limits taken from the target.
    """
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
        if p.target.get("mcpu") == mcpu and not mattr and not p.machine:
            specs = dataclasses.replace(p.specs, cores=int(cores or p.specs.cores))  # type: ignore[arg-type]
            return dataclasses.replace(p, name=f"{p.name}-{specs.cores}c", target=data, specs=specs)
    width = x86_vector_bytes(mcpu, mattr)
    machine = this_machine()
    if width is not None and machine.specs.isa == "x86_64":
        base = machine.specs
        specs = host_variant(base, min(width, base.simd_bytes), int(cores or base.cores))
        return HardwareProfile(f"{machine.key}-{mcpu}-{specs.cores}c", "cpu", data, specs,
                               sources=machine.native().sources, machine=machine.key)  # fmt: skip
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
    limits = {field: data[attr] / scale if scale != 1 else data[attr]
              for attr, (field, scale) in CUDA_LIMITS.items() if attr in data}  # fmt: skip
    if all(getattr(specs, k) == v for k, v in limits.items()):
        return dataclasses.replace(base, target=data)
    return dataclasses.replace(base, name=f"{base.name}-custom", target=data, specs=dataclasses.replace(specs, **limits))
