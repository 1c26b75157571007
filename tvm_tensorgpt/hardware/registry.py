"""The device registry: published devices (data/devices.json) and the host profiles of machines.

Host profiles are devices this project measures for real: each physical machine (``machine.py``)
under a few vector ISAs and core counts (enforced in the runner too, see runner.py). This
machine's profiles come first, then those of the other machines that measured committed records
(``data/machines.json``). ``host`` names this machine's native profile (``data.split`` says which
profiles are held out).
"""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .machine import HOST, recorded_machines, this_machine
from .profile import HardwareProfile, ProfileError, load_profile_file, profile_from_dict
from .vector import Standardizer


@lru_cache(maxsize=1)
def published_profiles() -> tuple[HardwareProfile, ...]:
    text = resources.files("tvm_tensorgpt.hardware").joinpath("data/devices.json").read_text(encoding="utf-8")
    return tuple(profile_from_dict(d) for d in json.loads(text)["devices"])


@lru_cache(maxsize=1)
def host_profiles() -> tuple[HardwareProfile, ...]:
    """This machine's profiles (those it can measure)."""
    return tuple(this_machine().profiles())


@lru_cache(maxsize=1)
def recorded_profiles() -> tuple[HardwareProfile, ...]:
    """The profiles of the other machines that measured committed records (not measurable here)."""
    here = this_machine().key
    return tuple(p for m in recorded_machines() if m.key != here for p in m.profiles())


# Devices a user described in files (``add_device_file``), by name.
_USER: dict[str, HardwareProfile] = {}


def add_device_file(path: str | Path) -> HardwareProfile:
    """Load a device description (JSON/TOML) so that its name works wherever a profile name does.
    A name that is taken (a built-in device, ``host``, or a file loaded before) is refused."""
    profile = load_device_file(path)
    _USER[profile.name] = profile
    return profile


def load_device_file(path: str | Path, also_taken: tuple[str, ...] = ()) -> HardwareProfile:
    """A device file's profile, refused when its name is taken (registry, ``host``, ``also_taken``)."""
    profile = load_profile_file(path)
    if profile.name in {HOST, *also_taken} or profile.name in {p.name for p in all_profiles()}:
        raise ProfileError(f"{path}: device name {profile.name!r} is already taken (a built-in device or a file "
                           "loaded before); give the device its own name")  # fmt: skip
    return profile


def all_profiles() -> list[HardwareProfile]:
    return [*published_profiles(), *host_profiles(), *recorded_profiles(), *_USER.values()]


def get_profile(name: str) -> HardwareProfile:
    if name == HOST:
        return this_machine().native()
    profiles = {p.name: p for p in all_profiles()}
    if name in profiles:
        return profiles[name]
    if re.fullmatch(r"host-(sse42|avx2)-\d+c", name):
        here = [p.name for p in host_profiles()]
        raise ProfileError(f"profile {name!r} no longer exists: host profiles name the machine that measures "
                           f"them; this machine's are {', '.join(here)} (records of the old host-* profiles "
                           "were measured on intel-xeon)")  # fmt: skip
    close = difflib.get_close_matches(name, profiles, n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise ProfileError(f"unknown device {name!r}.{hint} Known devices: {HOST}, {', '.join(profiles)}")


def universe_standardizer() -> Standardizer:
    """Standardization over every registry profile (the "universe" the model sees)."""
    return Standardizer.fit(all_profiles())
