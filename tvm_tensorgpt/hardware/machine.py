"""Physical machines: which one runs now, which ones measured records, and their host profiles.

Records are only comparable with records of the same machine, so a host profile is named after the
machine that measures it: ``<machine>-<isa>-<cores>c``, e.g. ``amd-zen3-avx2-2c``. The machine key
comes from the CPU's vendor, family and model (``/proc/cpuinfo``; the first machine's records kept
only its model name, so it is recognised by that and LLVM's name for it); machines that measured committed
records are described in ``data/machines.json``, so their profiles (and hardware vectors) exist on
every machine, not only where they were measured.

Profiles of a machine: ``sse42`` (LLVM ``nehalem``) and ``avx2`` (``core-avx2``) on 1 and 2 cores,
where the machine has the ISA, and ``native`` (LLVM's name for the machine itself, e.g. ``znver5``,
with every vector extension it has) on 1 and all cores. ``host`` is another name for this machine's
native profile on all cores.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..tvm_glue import host_target
from .detect import cpu_identity, detect_host, host_variant
from .profile import CPUSpecs, HardwareProfile, ProfileError

HOST = "host"  # the alias of this machine's native profile

# (vendor, family) -> microarchitecture by model range; what a machine key is made of.
_UARCH: dict[tuple[str, int], list[tuple[range, str]]] = {
    ("GenuineIntel", 6): [(range(85, 86), "skx"), (range(106, 107), "icx"), (range(143, 144), "spr"),
                          (range(207, 208), "emr"), (range(173, 174), "gnr")],  # fmt: skip
    ("AuthenticAMD", 23): [(range(0, 48), "zen1"), (range(48, 256), "zen2")],
    ("AuthenticAMD", 25): [(range(0, 16), "zen3"), (range(32, 96), "zen3"), (range(16, 32), "zen4"),
                           (range(96, 256), "zen4")],  # fmt: skip
    ("AuthenticAMD", 26): [(range(0, 256), "zen5")],
}
_VENDOR = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}

# label -> (LLVM mcpu, vector bytes) of the ISA variants every x86 machine is measured under
_ISA_VARIANTS = {"sse42": ("nehalem", 16), "avx2": ("core-avx2", 32)}


@dataclass(frozen=True)
class Machine:
    """A physical machine (one CPU model in one VM shape) that measures records."""

    key: str  # e.g. "amd-zen3"
    cpu: str  # the model name /proc/cpuinfo gives
    vendor: str
    family: int | None  # None where the records did not keep it
    model: int | None
    mcpu: str  # LLVM's name for this CPU: the native profiles' target
    specs: CPUSpecs  # all cores, widest vector ISA
    note: str = ""

    def profiles(self) -> list[HardwareProfile]:
        """The host profiles this machine measures: ISA variants first, native last."""
        sources = {"specs": f"machine {self.key} ({self.cpu}): {self.note or 'detected on this machine'}"}
        out = []
        if self.specs.isa == "x86_64":
            for label, (mcpu, width) in _ISA_VARIANTS.items():
                if width > self.specs.simd_bytes:
                    continue
                for cores in sorted({1, min(2, self.specs.cores)}):
                    out.append(HardwareProfile(f"{self.key}-{label}-{cores}c", "cpu",
                                               {"kind": "llvm", "mcpu": mcpu, "num-cores": cores},
                                               host_variant(self.specs, width, cores), sources=sources,
                                               machine=self.key))  # fmt: skip
        for cores in sorted({1, self.specs.cores}):
            out.append(HardwareProfile(f"{self.key}-native-{cores}c", "cpu",
                                       {"kind": "llvm", "mcpu": self.mcpu, "num-cores": cores},
                                       dataclasses.replace(self.specs, cores=cores), sources=sources,
                                       machine=self.key))  # fmt: skip
        return out

    def native(self) -> HardwareProfile:
        """The profile ``host`` names: native ISA, all cores."""
        return self.profiles()[-1]


def machine_key(vendor: str, family: int, model: int) -> str:
    """``intel-xeon``, ``amd-zen3``, ...; ``<vendor>-f<family>m<model>`` for a CPU not in the table."""
    short = _VENDOR.get(vendor, vendor.lower() or "cpu")
    for models, uarch in _UARCH.get((vendor, family), []):
        if model in models:
            return f"{short}-{uarch}"
    return f"{short}-f{family}m{model}"


@lru_cache(maxsize=1)
def recorded_machines() -> tuple[Machine, ...]:
    """The machines described in data/machines.json (those that measured committed records)."""
    text = resources.files("tvm_tensorgpt.hardware").joinpath("data/machines.json").read_text(encoding="utf-8")
    out = []
    for entry in json.loads(text)["machines"]:
        specs = dict(entry["specs"], features=tuple(entry["specs"]["features"]))
        out.append(Machine(entry["key"], entry["cpu"], entry["vendor"], entry["family"], entry["model"],
                           entry["mcpu"], CPUSpecs(**specs), entry.get("note", "")))  # fmt: skip
    return tuple(out)


@lru_cache(maxsize=1)
def this_machine() -> Machine:
    """The machine running now. A recorded machine keeps its recorded specs (its profiles' vectors
    are then the same everywhere); a new one is described by detection."""
    vendor, family, model = cpu_identity()
    specs, name = detect_host()
    mcpu = str(host_target(specs.cores)["mcpu"])
    key = machine_key(vendor, family, model)
    for machine in recorded_machines():
        if machine.family is None:  # recorded without family/model: known by model name and LLVM name
            if (machine.vendor, machine.cpu, machine.mcpu) == (vendor, name, mcpu):
                return machine
        elif machine.key == key:
            return machine
    return Machine(key, name, vendor, family, model, mcpu, specs)


def machine_of(profile: HardwareProfile) -> Machine:
    """The recorded or running machine that measures ``profile``."""
    for machine in (this_machine(), *recorded_machines()):
        if machine.key == profile.machine:
            return machine
    raise ProfileError(f"profile {profile.name!r} is not measured by a known machine (known: "
                       f"{', '.join(m.key for m in (this_machine(), *recorded_machines()))})")  # fmt: skip


def check_this_machine(profile: HardwareProfile, what: str) -> None:
    """Refuse to measure ``profile`` here when another machine measures it (``what``: the action)."""
    here = this_machine()
    if profile.kind == "cpu" and profile.machine and profile.machine != here.key:
        raise ProfileError(f"cannot {what} {profile.name}: its records come from machine {profile.machine}, "
                           f"but this machine is {here.key} ({here.cpu}); use one of this machine's "
                           f"profiles: {', '.join(p.name for p in here.profiles())}")  # fmt: skip
