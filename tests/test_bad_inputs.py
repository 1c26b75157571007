"""Bad inputs, as a hostile new user would give them: each is refused with one line that names the
bad value (exit code 2 on the command line, a ValueError subclass in Python), before heavy work."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from conftest import HERE_SSE_1C, tiny_net

from tvm_tensorgpt.cli import main
from tvm_tensorgpt.data.split import HELDOUT_HOST, check_not_heldout
from tvm_tensorgpt.hardware import (
    ProfileError,
    Standardizer,
    get_profile,
    load_profile_file,
    recorded_machines,
    this_machine,
    universe_standardizer,
)
from tvm_tensorgpt.hardware.registry import _USER
from tvm_tensorgpt.tvm_glue import TargetError, parse_target

OTHER_MACHINE = next(m.key for m in recorded_machines() if m.key != this_machine().key)
CPU_DEVICE = {"name": "my-cpu", "kind": "cpu", "target": {"kind": "llvm", "mcpu": "znver3", "num-cores": 4},
              "specs": {"isa": "x86_64", "features": ["avx2"], "cores": 4, "threads_per_core": 1, "clock_ghz": 3.0,
                        "simd_bytes": 32, "fma_units": 2, "l1d_kb": 32, "l2_kb": 512, "l3_mb": 16, "mem_bw_gbs": 40}}


def _device(tmp_path: Path, device: str, **change) -> str:
    """A device file: CPU_DEVICE named ``device`` with ``change`` (``specs__x`` changes a spec, None
    removes it), or raw ``text``."""
    if "text" in change:
        path = tmp_path / f"{device}.json"
        path.write_text(change["text"])
        return str(path)
    data = json.loads(json.dumps(CPU_DEVICE))
    data["name"] = device
    for key, value in change.items():
        where, _, field = key.partition("__")
        parent, key_ = (data[where], field) if field else (data, where)
        if value is None:
            parent.pop(key_)
        else:
            parent[key_] = value
    path = tmp_path / f"{device}.json"
    path.write_text(json.dumps(data))
    return str(path)


# (argv, message fragment); "{tmp}" is a fresh folder, "{file}" a plain file in it
CLI_CASES = [
    (["tune", "--workload", "matmul-128", "--trials", "0"], "--trials 0 compiles a model with predicted schedules only"),
    (["tune", "--workload", "matmul-128", "--trials", "-3"], "--trials must be at least 1"),
    (["tune", "--workload", "matmul-128", "--per-round", "0"], "--per-round must be at least 1"),
    (["tune", "--workload", "matmul-128", "--seed", "-1"], "--seed must be between 0"),
    (["tune", "--workload", "matmul-128", "--seed", str(2**31)], "--seed must be between 0"),
    (["tune", "--workload", "matmul-128", "--work-dir", "{file}"], "is a file, not a folder"),
    (["tune", "--workload", "matmul-128", "--work-dir", "/proc/1/nope"], "is not writable"),
    (["tune", "--workload", "matmul-128", "--generator", "{tmp}/missing"], "neither default nor prior"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "llvm", "mcpu": "znver33"}'], "LLVM does not know mcpu 'znver33'"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "llvm", "num-cores": 0}'], "num-cores must be a whole number >= 1"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "llvm", "num-cores": "two"}'], "num-cores"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "llvm", "num-cores": 999}'], "num-cores 999 is more than"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "cuda"}'], 'needs its "arch"'),
    (["tune", "--workload", "matmul-128", "--target", "llvm -mcpu=znver3"], "CLI string form"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "llvm",'], "not valid JSON"),
    (["tune", "--workload", "matmul-128", "--target", "nvidia/no-such-gpu"], "cannot make a target"),
    (["tune", "--workload", "matmul-128", "--target", '{"kind": "bogus"}'], "cannot make a target"),
    (["tune", "--workload", "matmul-128", "--profile", "no-such-device"], "unknown device 'no-such-device'"),
    (["tune", "--workload", "matmul-128", "--profile", "host-avx2-2c"], "no longer exists"),
    (["tune", "--workload", "no-such-workload"], "no-such-workload"),
    (["tune", "--model", "no-such-model"], "no-such-model"),
    (["collect", "--profile", "jetson-xavier", "--tasks", "resnet18/max_pool2d", "--data-dir", "{tmp}"], "GPU profile"),
    (["collect", "--profile", f"{OTHER_MACHINE}-sse42-1c", "--tasks", "resnet18/max_pool2d", "--data-dir", "{tmp}"],
     f"records come from machine {OTHER_MACHINE}"),
    (["collect", "--profile", HERE_SSE_1C, "--trials", "0", "--data-dir", "{tmp}"], "--trials must be at least 1"),
    (["collect", "--profile", HERE_SSE_1C, "--chunk", "0", "--data-dir", "{tmp}"], "--chunk must be at least 1"),
    (["collect", "--profile", HERE_SSE_1C, "--seed", "-5", "--data-dir", "{tmp}"], "--seed must be between 0"),
    (["collect", "--profile", HERE_SSE_1C, "--data-dir", "{file}"], "is a file, not a folder"),
    (["collect", "--profile", HERE_SSE_1C, "--tasks", "no/such-task", "--data-dir", "{tmp}"], "unknown task"),
    (["collect", "--profile", HERE_SSE_1C, "--rpc", "127.0.0.1:9190", "--data-dir", "{tmp}"], "go together"),
    (["collect", "--profile", "no-such-device"], "unknown device"),
    (["collect", "--profile", HELDOUT_HOST, "--tasks", "training", "--data-dir", "{tmp}"], "held out"),
    (["ingest", "{tmp}", "--profile", HERE_SSE_1C, "--data-dir", "{tmp}/data"], "not a MetaSchedule work_dir"),
    (["ingest", "{tmp}/missing", "--profile", HERE_SSE_1C], "not a MetaSchedule work_dir"),
    (["ingest", "{tmp}", "--profile", "no-such-device"], "unknown device"),
    (["data", "stats", "--data-dir", "{tmp}/missing"], "is not a folder"),
    (["data", "stats", "--data-dir", "{file}"], "is not a folder"),
    (["train", "--out", "{tmp}/ckpt", "--epochs", "0"], "--epochs must be at least 1"),
    (["train", "--out", "{tmp}/ckpt", "--batch", "0"], "--batch must be at least 1"),
    (["train", "--out", "{tmp}/ckpt", "--lr", "0"], "--lr must be a positive number"),
    (["train", "--out", "{tmp}/ckpt", "--lr", "nan"], "--lr must be a positive number"),
    (["train", "--out", "{tmp}/ckpt", "--seed", "-1"], "--seed must be between 0"),
    (["train", "--out", "{file}"], "is a file, not a folder"),
    (["train", "--out", "{tmp}/ckpt", "--data-dir", "{tmp}/missing"], "is not a folder of profile databases"),
    (["train", "--out", "{tmp}/ckpt", "--threads", "0"], "--threads must be at least 1"),
    (["costmodel", "train", "--out", "{tmp}/cm", "--rounds", "0"], "--rounds must be at least 1"),
    (["costmodel", "eval", "--model", "{tmp}/missing", "--data-dir", "{tmp}"], "missing"),
    (["costmodel", "eval", "--data-dir", "{tmp}", "--fresh", "{tmp}/missing"], "is not a folder of profile databases"),
    (["costmodel", "eval", "--data-dir", "{tmp}", "--fresh", "{tmp}", "--fresh-records", "0"], "--fresh-records needs"),
    (["bundle", "{tmp}/missing", "--out", "{tmp}/out"], "missing"),
    (["devices", "show", "no-such-device"], "unknown device"),
    (["devices", "--file", "{tmp}/missing.json"], "missing.json"),
    (["--device-file", "{tmp}/missing.json", "devices"], "missing.json"),
]


@pytest.mark.parametrize("argv, fragment", CLI_CASES, ids=[f"{i}-{' '.join(a)[:60]}" for i, (a, _) in enumerate(CLI_CASES)])
def test_cli_refuses_bad_input_in_one_line(argv, fragment, tmp_path, capsys):
    (tmp_path / "plain.txt").write_text("not a folder")
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{file}", str(tmp_path / "plain.txt")) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err, err
    assert len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt"]  # nothing was written


DEVICE_FILE_CASES = [
    ({"text": "{not json"}, "not valid json"),
    ({"specs__cores": -4}, "is negative"),
    ({"specs__clock_ghz": float("nan")}, "clock_ghz"),
    ({"specs__l2_kb": 0.5}, "outside the plausible range"),
    ({"specs__simd_bytes": "wide"}, "must be a number"),
    ({"specs__fma_units": None}, "missing field(s) fma_units"),
    ({"specs__turbo": 5}, "unknown field(s) turbo"),
    ({"kind": "tpu"}, "kind must be 'cpu' or 'gpu'"),
    ({"target": {"mcpu": "znver3"}}, "target must be a JSON target dict"),
    ({"target": {"kind": "llvm", "mcpu": "znver3", "num-cores": 8}}, "num-cores (8) and specs.cores (4) disagree"),
    ({"kind": "gpu"}, "missing field(s) arch, sms"),
    ({"name": None}, "missing 'name'"),
]


@pytest.mark.parametrize("change, fragment", DEVICE_FILE_CASES, ids=[f[:30] for _, f in DEVICE_FILE_CASES])
def test_device_files_are_validated(change, fragment, tmp_path, capsys):
    path = _device(tmp_path, "my-cpu", **change)
    assert main(["devices", "--file", path]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1, err


def test_device_names_cannot_shadow_or_repeat(tmp_path, capsys):
    for name in ("host", "rtx4090", f"{this_machine().key}-avx2-1c"):
        assert main(["devices", "--file", _device(tmp_path, name)]) == 2
        assert "already taken" in capsys.readouterr().err
    one, two = _device(tmp_path, "my-cpu"), str(tmp_path / "copy.json")
    Path(two).write_text(Path(one).read_text())
    assert main(["devices", "--file", one, "--file", two]) == 2
    assert "already taken" in capsys.readouterr().err


def test_a_device_file_works_where_a_profile_name_does(tmp_path, capsys):
    try:
        assert main(["--device-file", _device(tmp_path, "my-cpu"), "devices", "show", "my-cpu"]) == 0
        assert "my-cpu: cpu, bucket HW_CPU_X86" in capsys.readouterr().out
        assert get_profile("my-cpu").specs.cores == 4
    finally:
        _USER.clear()


API_CASES = [
    (lambda: parse_target(123), TargetError, "not int"),
    (lambda: parse_target({"kind": "llvm", "mcpu": "zen9"}), TargetError, "LLVM does not know mcpu"),
    (lambda: parse_target({"kind": "cuda"}), TargetError, 'needs its "arch"'),
    (lambda: get_profile(""), ProfileError, "unknown device ''"),
    (lambda: get_profile("host-sse42-1c"), ProfileError, "no longer exists"),
    (lambda: load_profile_file("/nonexistent/device.json"), OSError, "device.json"),
    (lambda: check_not_heldout(HELDOUT_HOST), ValueError, "is held out"),
    (lambda: check_not_heldout(HELDOUT_HOST.replace("-2c", "-1c")), ValueError, "is held out"),
]


@pytest.mark.parametrize("call, error, fragment", API_CASES, ids=[f for _, _, f in API_CASES])
def test_python_api_refuses_bad_input(call, error, fragment):
    with pytest.raises(error, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        call()


@pytest.mark.parametrize("mean, std, fragment", [
    (0.0, float("nan"), "std"), (0.0, 0.0, "not positive"), (float("inf"), 1.0, "NaN/infinite mean"),
])
def test_a_standardizer_with_nan_or_zero_std_is_refused(mean, std, fragment):
    data = universe_standardizer().to_dict()
    data["mean"][3], data["std"][3] = mean, std
    with pytest.raises(ValueError, match=fragment):
        Standardizer.from_dict(data)


def test_a_checkpoint_with_nan_or_misshapen_weights_is_refused(tmp_path):
    from safetensors.torch import load_file, save_file

    from tvm_tensorgpt.model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

    path = save_checkpoint(tmp_path / "ok", tiny_net(), universe_standardizer())
    weights = path / "model.safetensors"
    state = load_file(str(weights))
    name = next(k for k, v in state.items() if v.is_floating_point() and v.dim() == 2)
    save_file({**state, name: torch.full_like(state[name], math.nan)}, str(weights))
    with pytest.raises(CheckpointError, match="NaN or infinite weights"):
        load_checkpoint(path)
    save_file({**state, name: torch.zeros(3, 3)}, str(weights))
    with pytest.raises(CheckpointError, match="does not match the shapes"):
        load_checkpoint(path)
    (path / "config.json").write_text("{")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(path)
    assert main(["tune", "--workload", "matmul-128", "--generator", str(path), "--trials", "1"]) == 2


def test_generator_and_search_settings_are_checked():
    from tvm_tensorgpt.generators import MixtureGenerator, PriorGenerator, resolve_generator

    with pytest.raises(ValueError, match="non-negative weights"):
        MixtureGenerator([(PriorGenerator(), float("nan"))])
    with pytest.raises(ValueError, match="non-negative weights"):
        MixtureGenerator([])
    with pytest.raises(ValueError, match="nor a checkpoint folder"):
        resolve_generator("/nonexistent/checkpoint")
