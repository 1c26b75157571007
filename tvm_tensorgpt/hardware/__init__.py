"""Hardware grounding: device profiles, the 24-D hardware vector and bucket tokens."""

from .detect import detect_host
from .match import profile_from_target
from .profile import CPUSpecs, GPUSpecs, HardwareProfile, ProfileError, load_profile_file, profile_from_dict
from .registry import all_profiles, get_profile, host_profiles, published_profiles, universe_standardizer
from .vector import DIMENSIONS, VECTOR_DIM, Standardizer, raw_vector

__all__ = [
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
