"""Hardware profiles, the 24-D vector, standardization, detection and bad descriptions."""

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from tvm_tensorgpt.data.split import HELDOUT_HOST
from tvm_tensorgpt.hardware import (
    this_machine,
    DIMENSIONS,
    VECTOR_DIM,
    ProfileError,
    Standardizer,
    all_profiles,
    get_profile,
    host_profiles,
    load_profile_file,
    profile_from_dict,
    profile_from_target,
    published_profiles,
    raw_vector,
    universe_standardizer,
)


PUBLISHED = ["rtx4090", "jetson-xavier", "jetson-orin", "xeon-8272cl", "ryzen-5800h"]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_registry_has_published_devices_and_host_profiles():
    names = [p.name for p in all_profiles()]
    assert [p.name for p in published_profiles()] == PUBLISHED
    hosts = [p.name for p in host_profiles()]
    here = this_machine().key
    assert len(hosts) >= 4 and all(n.startswith(here + "-") for n in hosts)
    assert get_profile("host") == this_machine().native() and get_profile("host").name in hosts
    # every machine that measured committed records has its profiles everywhere, the held-out one too
    assert {"intel-xeon-avx2-1c", "amd-zen5-native-2c", HELDOUT_HOST} <= set(names)
    assert len(names) >= 7 and len(set(names)) == len(names)
    for p in published_profiles():
        assert p.sources, f"{p.name} cites no source"


def test_buckets():
    assert get_profile("rtx4090").bucket == "HW_GPU_DESKTOP"
    assert get_profile("jetson-orin").bucket == "HW_GPU_EDGE"
    assert get_profile("jetson-xavier").bucket == "HW_GPU_EDGE"
    assert get_profile("xeon-8272cl").bucket == "HW_CPU_X86"
    arm = dataclasses.replace(get_profile("ryzen-5800h"), name="arm",
                              specs=dataclasses.replace(get_profile("ryzen-5800h").specs, isa="aarch64"))  # fmt: skip
    assert arm.bucket == "HW_CPU_ARM"


def test_vector_schema_and_derived_peak():
    assert VECTOR_DIM == len(DIMENSIONS) == 24
    assert len({d.name for d in DIMENSIONS}) == 24
    assert {d.transform for d in DIMENSIONS} <= {"flag", "log2", "log10", "ratio", "ordinal"}
    for p in all_profiles():
        v = raw_vector(p)
        assert v.shape == (24,) and np.all(np.isfinite(v)), p.name
    # peak is derived from the published specs and matches the vendors' figures
    assert get_profile("rtx4090").specs.peak_gflops == pytest.approx(82_600, rel=0.01)
    assert get_profile("jetson-orin").specs.peak_gflops == pytest.approx(5_300, rel=0.01)
    assert get_profile("jetson-xavier").specs.peak_gflops == pytest.approx(1_410, rel=0.01)


def test_standardization_zero_mean_unit_std_and_round_trip():
    profiles = all_profiles()
    st = Standardizer.fit(profiles)
    z = np.stack([st(p) for p in profiles])
    assert np.allclose(z.mean(axis=0), 0, atol=1e-9)
    varying = z.std(axis=0) > 0
    assert np.allclose(z.std(axis=0)[varying], 1)
    again = Standardizer.from_dict(json.loads(json.dumps(st.to_dict())))
    assert np.allclose(again(profiles[0]), st(profiles[0]))
    with pytest.raises(ValueError, match="dimensions"):
        Standardizer.from_dict({**st.to_dict(), "dimensions": ["x"] * 24})


def test_published_devices_stay_apart():
    st = universe_standardizer()
    vectors = {name: st(get_profile(name)) for name in PUBLISHED}
    for a, b in itertools.combinations(PUBLISHED, 2):
        assert _cos(vectors[a], vectors[b]) < 0.95, (a, b)
    # raw vectors of the GPUs are nearly parallel: that is what standardization fixes
    raw = {n: raw_vector(get_profile(n)) for n in ("jetson-xavier", "jetson-orin")}
    assert _cos(raw["jetson-xavier"], raw["jetson-orin"]) > _cos(vectors["jetson-xavier"], vectors["jetson-orin"])


def _changed_specs(a, b) -> set[str]:
    ra, rb = a.raw(), b.raw()
    return {k for k in ra if k != "peak_gflops" and ra[k] != rb[k]}


@pytest.mark.parametrize(
    "a, b, must_move",
    [
        ("intel-xeon-sse42-2c", "intel-xeon-avx2-2c", {"vector_lanes", "peak_flops", "isa_generation", "register_file"}),
        ("intel-xeon-avx2-1c", "intel-xeon-avx2-2c", {"compute_units", "peak_flops", "bandwidth_per_unit", "total_fma_lanes"}),
    ],
)
def test_host_variants_differ_exactly_where_their_specs_differ(a, b, must_move):
    pa, pb = get_profile(a), get_profile(b)
    changed = _changed_specs(pa, pb)
    assert changed, "the variants must differ in some spec"
    moved = {d.name for d, x, y in zip(DIMENSIONS, raw_vector(pa), raw_vector(pb)) if not math.isclose(x, y)}
    allowed = {d.name for d in DIMENSIONS if set(d.depends) & changed}
    assert must_move <= moved <= allowed
    assert pa.target != pb.target


def test_detection_from_llvm_targets():
    assert profile_from_target({"kind": "llvm", "mcpu": "znver3", "num-cores": 8}).name == "ryzen-5800h"
    four = profile_from_target({"kind": "llvm", "mcpu": "znver3", "num-cores": 4})
    assert four.specs.cores == 4 and four.specs.simd_bytes == 32
    here = this_machine().key  # a target is tuned where it runs: this machine's profile first
    assert profile_from_target({"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2}).name == f"{here}-avx2-2c"
    sse = profile_from_target({"kind": "llvm", "mcpu": "nehalem", "num-cores": 1})
    assert sse.name == f"{here}-sse42-1c" and sse.specs.simd_bytes == 16 and sse.machine == here
    narrowed = profile_from_target({"kind": "llvm", "mcpu": "haswell", "mattr": ["-avx", "-avx2"], "num-cores": 2})
    assert narrowed.specs.simd_bytes == 16


def test_detection_from_cuda_targets_and_tags():
    assert profile_from_target("nvidia/geforce-rtx-4090").name == "rtx4090"
    assert profile_from_target("nvidia/jetson-agx-orin-64gb").name == "jetson-orin"
    custom = profile_from_target({"kind": "cuda", "arch": "sm_87", "max_threads_per_block": 512})
    assert custom.specs.max_threads_per_block == 512 and custom.name == "jetson-orin-custom"


def test_host_detection_reads_the_os():
    host = get_profile("host")
    specs = host.specs
    assert specs.cores >= 1 and specs.clock_ghz > 0.2 and specs.l1d_kb > 0 and specs.mem_bw_gbs > 1
    assert specs.simd_bytes in (16, 32, 64)
    assert host.target["kind"] == "llvm" and host.target["num-cores"] == specs.cores


@pytest.mark.parametrize(
    "target, message",
    [
        ({"kind": "cuda"}, 'no "arch"'),
        ({"kind": "cuda", "arch": "sm_99"}, "no GPU profile for arch 'sm_99'"),
        ({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "apple-m1"}, "no hardware profile for llvm target with mcpu='apple-m1'"),
        ({"kind": "c"}, "llvm (CPU) and cuda (GPU) are supported"),
    ],
)
def test_unmappable_targets_say_what_is_needed(target, message):
    with pytest.raises(ProfileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        profile_from_target(target)


def test_unknown_device_lists_close_matches():
    with pytest.raises(ProfileError, match="Did you mean jetson-orin"):
        get_profile("jetson-oriin")


def _user_device() -> dict:
    return get_profile("ryzen-5800h").to_dict() | {"name": "my-laptop"}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["specs"].pop("l2_kb"), r"missing field\(s\) l2_kb"),
        (lambda d: d["specs"].update(cores=-4), "cores = -4 is negative"),
        (lambda d: d["specs"].update(clock_ghz=float("nan")), "clock_ghz is nan"),
        (lambda d: d["specs"].update(l3_mb=16384 * 1024), "l3_mb = .* outside the plausible range .* check the unit"),
        (lambda d: d["specs"].update(clock_ghz=3200), "clock_ghz = 3200 GHz is outside"),
        (lambda d: d["specs"].update(turbo=True), "unknown field"),
        (lambda d: d.update(kind="tpu"), "kind must be 'cpu' or 'gpu'"),
        (lambda d: d.update(target="llvm -mcpu=znver3"), "JSON target dict"),
    ],
)
def test_bad_user_profiles_name_the_field(tmp_path, mutate, message):
    data = _user_device()
    mutate(data)
    path = tmp_path / "device.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match=message):
        load_profile_file(path)


def test_user_profile_from_toml(tmp_path):
    data = _user_device()
    specs = data["specs"]
    lines = ['name = "my-laptop"', 'kind = "cpu"', "[target]", 'kind = "llvm"', 'mcpu = "znver3"',
             '"num-cores" = 8', "[specs]"]  # fmt: skip
    for key, value in specs.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path = tmp_path / "device.toml"
    path.write_text("\n".join(lines) + "\n")
    profile = load_profile_file(path)
    assert profile.name == "my-laptop" and profile.specs == get_profile("ryzen-5800h").specs
    assert profile_from_dict(profile.to_dict()).specs == profile.specs


def test_runner_pins_its_worker_to_the_profile_cores():
    """The profile's core count is enforced where kernels run, not only in the target."""
    import functools
    import os

    from tvm.support.popen_pool import PopenPoolExecutor

    from tvm_tensorgpt.hardware.runner import local_runner, pin_to_cores

    def worker_view():  # nested, so the worker gets it by value
        return sorted(os.sched_getaffinity(0)), os.environ.get("TVM_NUM_THREADS")

    pool = PopenPoolExecutor(max_workers=1, initializer=functools.partial(pin_to_cores, 1))
    try:
        affinity, threads = pool.submit(worker_view).result()
    finally:
        pool.shutdown()
    assert len(affinity) == 1 and threads == "1"
    runner = local_runner(get_profile(f"{this_machine().key}-avx2-1c"))
    assert len(runner._inst.pool.submit(worker_view).result()[0]) == 1  # the real runner pool
    with pytest.raises(ValueError, match="GPU profile"):
        local_runner(get_profile("jetson-orin"))


def test_sse_and_avx2_profiles_compile_different_code():
    """The ISA variants are real: the same schedule compiles to SSE (xmm) or AVX2 (ymm) code."""
    import tvm

    from tvm_tensorgpt.workloads import get_workload

    mod = get_workload("matmul-128").build()
    asm = {}
    for label in ("sse42", "avx2"):
        executable = tvm.compile(mod, target=tvm.target.Target(get_profile(f"intel-xeon-{label}-2c").target))
        asm[label] = executable.mod.inspect_source("asm")
    assert "%ymm" not in asm["sse42"] and "%xmm" in asm["sse42"]
    assert "%ymm" in asm["avx2"]


@pytest.mark.parametrize(
    "target, message",
    [
        ({"kind": "cuda", "arch": "sm_87", "tag": "nvidia/jetson-agx-orin-64gb"}, None),
        ({"kind": "cuda", "tag": "nvidia/jetson-agx-orin-64gb"}, 'no "arch"; add "arch": "sm_87"'),
        ({"kind": "cuda", "arch": "sm_87", "tag": "nvidia/geforce-rtx-4090"}, "tag .* says arch sm_89 but the specs say sm_87"),
        ({"kind": "cuda", "arch": "sm_87", "max_threads_per_block": 512}, "max_threads_per_block = 512 but the specs"),
        ({"kind": "cuda", "arch": "sm_87", "max_shared_memory_per_block": 65536}, "smem_per_block_kb = 48"),
        ({"kind": "cuda", "arch": "sm_87", "tag": "nvidia/no-such-gpu"}, "no target tag 'nvidia/no-such-gpu'"),
        ({"kind": "llvm", "mcpu": "cortex-a78"}, "needs a CUDA target"),
    ],
)
def test_gpu_profile_target_and_tag_must_agree_with_the_specs(target, message):
    """A GPU profile round-trips through its dict form; one whose target (or the TVM tag it names)
    contradicts its limits is refused with both values named."""
    data = get_profile("jetson-orin").to_dict()
    assert profile_from_dict(data) == get_profile("jetson-orin")
    data["target"] = target
    if message is None:
        assert profile_from_dict(data).specs == get_profile("jetson-orin").specs
        return
    with pytest.raises(ProfileError, match=message):
        profile_from_dict(data)
