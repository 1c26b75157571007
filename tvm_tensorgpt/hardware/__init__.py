"""Hardware grounding: device profiles, the 24-D hardware vector and bucket tokens."""

from .detect import detect_host
from .machine import HOST, Machine, check_this_machine, machine_of, recorded_machines, this_machine
from .match import profile_from_target
from .profile import CPUSpecs, GPUSpecs, HardwareProfile, ProfileError, load_profile_file, profile_from_dict
from .registry import (
    add_device_file,
    all_profiles,
    get_profile,
    host_profiles,
    published_profiles,
    recorded_profiles,
    universe_standardizer,
)
from .vector import DIMENSIONS, VECTOR_DIM, Standardizer, raw_vector

__all__ = [
    "HOST",
    "add_device_file",
    "Machine",
    "check_this_machine",
    "machine_of",
    "recorded_machines",
    "recorded_profiles",
    "this_machine",
    "DIMENSIONS",
    "VECTOR_DIM",
    "CPUSpecs",
    "GPUSpecs",
    "HardwareProfile",
    "ProfileError",
    "Standardizer",
    "all_profiles",
    "detect_host",
    "get_profile",
    "host_profiles",
    "load_profile_file",
    "profile_from_dict",
    "profile_from_target",
    "published_profiles",
    "raw_vector",
    "universe_standardizer",
]
