"""The command line, including its errors on bad input."""

import json
import math
import subprocess
import sys

import pytest

from tvm_tensorgpt.cli import main
from tvm_tensorgpt.data.split import HELDOUT_HOST


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["tune", "--workload", "nope"], "unknown workload 'nope'; known workloads: "),
        (["tune", "--model", "nope"], "unknown model 'nope': give a built-in name (bert, conv-block, densenet121"),
        (["tune", "--workload", "matmul-128", "--target", "llvm -mcpu=core-avx2"], "JSON dict"),
        (["tune", "--workload", "matmul-128", "--trials", "-1"], "--trials must be at least 1"),
    ],
)
def test_bad_tune_arguments_exit_2_with_a_message(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tensorgpt: error: ") and expected in err


def test_unknown_strategy_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["tune", "--workload", "matmul-128", "--strategy", "nope"])
    assert exit_info.value.code == 2
    assert "tensorgpt" in capsys.readouterr().err


def test_workloads_lists_everything(capsys):
    assert main(["workloads"]) == 0
    out = capsys.readouterr().out
    for name in ("matmul-128", "conv2d-resnet", "softmax-bert", "conv-block"):
        assert name in out


def test_tune_json_end_to_end(tmp_path):
    """`python -m tvm_tensorgpt tune ... --json`: one JSON object on stdout, logs on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_tensorgpt", "tune", "--workload", "matmul-128", "--trials", "8",
         "--per-round", "8", "--target", '{"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2}',
         "--work-dir", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert {"trials", "generated", "valid", "best_us", "wall_s", "work_dir"} <= set(summary)
    assert summary["trials"] == 8 and summary["records_valid"] >= 7
    assert summary["valid"] <= summary["generated"] and summary["best_us"] > 0
    assert summary["work_dir"] == str(tmp_path)
    # MetaSchedule's summary table goes to the work_dir's logs, not the console (--verbose shows it)
    assert "Total trials: 8" in "".join(p.read_text() for p in (tmp_path / "logs").iterdir())
    assert "Total trials" not in proc.stderr


def test_tune_on_a_heldout_task_and_profile_uses_the_bundled_checkpoint(tmp_path):
    """The package ships a trained checkpoint and `tune` uses it by default: a held-out task on
    the held-out profile, every generated candidate valid after postprocessing."""
    from tvm_tensorgpt.model.checkpoint import (
        DEFAULT_CHECKPOINT,
        has_default_checkpoint,
    )

    assert has_default_checkpoint(), f"no bundled checkpoint in {DEFAULT_CHECKPOINT}"
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_tensorgpt", "tune", "--workload", "bert/matmul1", "--profile", HELDOUT_HOST,
         "--trials", "8", "--per-round", "8", "--work-dir", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["generator"] == f"50% checkpoint {DEFAULT_CHECKPOINT} + 50% prior"  # SearchConfig.prior_share
    assert summary["trials"] == 8 and summary["generated"] >= 8
    assert summary["valid"] >= 0.99 * summary["generated"]
    # MetaSchedule's task tables stay in the work_dir's logs, off the console (--verbose shows them)
    assert "task_scheduler.cc" not in proc.stderr + proc.stdout
    assert "task_scheduler.cc" in "".join(p.read_text() for p in (tmp_path / "logs").iterdir())


def test_devices_cli_json(capsys):
    assert main(["devices", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert len(entries) >= 7
    for entry in entries:
        assert {"name", "bucket", "kind", "target", "raw", "vector"} <= set(entry)
        assert len(entry["vector"]) == 24 and all(math.isfinite(x) for x in entry["vector"])


def test_devices_show_and_unknown(capsys):
    assert main(["devices", "show", "jetson-orin"]) == 0
    out = capsys.readouterr().out
    assert "HW_GPU_EDGE" in out and "flop_per_byte" in out and "Jetson AGX Orin" in out
    assert main(["devices", "show", "jetson-oriin"]) == 2
    assert "Did you mean jetson-orin" in capsys.readouterr().err


def test_ctrl_c_stops_after_the_batch_and_says_how_to_resume(tmp_path):
    """SIGINT to the whole process group (a terminal's Ctrl-C) during `tune`: the batch being
    measured is written, the summary and one line on resuming are printed, exit code 130, no
    traceback; running the same command again resumes from the kept records."""
    import os
    import signal
    import time

    from conftest import record_lines

    command = [sys.executable, "-m", "tvm_tensorgpt", "tune", "--workload", "matmul-128", "--trials", "64",
               "--per-round", "4", "--work-dir", str(tmp_path), "--generator", "prior"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 300
    while len(record_lines(tmp_path)) < 4 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    kept = record_lines(tmp_path)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert f"interrupted; {len(kept)} records are kept in {tmp_path}" in err and 4 <= len(kept) < 64
    assert f"trials: {len(kept)}" in out
    resumed = subprocess.run(command[:7] + [str(len(kept) + 4)] + command[8:] + ["--json"], capture_output=True,
                             text=True, timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout)["trials"] == len(kept) + 4 and record_lines(tmp_path)[: len(kept)] == kept


USER_MODEL = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)
        self.out = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.out(torch.relu(self.fc(x))) * 2.0


def make():
    torch.manual_seed(0)
    return Tiny().eval(), (torch.randn(4, 16),)


class Det(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.det(x)


def unsupported():
    return Det(), (torch.randn(3, 3),)


def wrong():
    return 42
'''


def test_a_users_pt2_model_is_tuned_exported_and_loads_back(tmp_path, capsys):
    """A model saved with torch.export.save: one trial measures one of its two kernels, the other
    gets a predicted schedule; written as a library, loaded back into a relax VM, and its output
    matches PyTorch's."""
    import importlib.util

    import numpy as np
    import torch
    import tvm
    from tvm import relax

    (tmp_path / "user_model.py").write_text(USER_MODEL)
    spec = importlib.util.spec_from_file_location("user_model", tmp_path / "user_model.py")
    user = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user)
    module, example = user.make()
    torch.export.save(torch.export.export(module, example), tmp_path / "tiny.pt2")
    library = tmp_path / "tiny.so"
    assert main(["tune", "--model", str(tmp_path / "tiny.pt2"), "--trials", "1", "--work-dir", str(tmp_path / "w"),
                 "--export", str(library)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"library: {library}" in out and "output: matches PyTorch" in out
    assert "kernels: 2 = 1 measured (1 trials) + 1 predicted (no measurement) + 0 default loops" in out
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(library)), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(example[0].numpy()))
    got = (got[0] if isinstance(got, (list, tuple, tvm.ir.Array)) else got).numpy()
    with torch.no_grad():
        np.testing.assert_allclose(got, module(*example).numpy(), rtol=1e-2, atol=1e-4)


@pytest.mark.parametrize("model, fragment", [
    ("{tmp}/missing.pt2", "does not exist"),
    ("{tmp}/corrupt.pt2", "is not a program written by torch.export.save"),
    ("{tmp}/user_model.py:nope", "has no function 'nope'"),
    ("{tmp}/user_model.py:wrong", "must return (torch.nn.Module, tuple of example tensors)"),
    ("{tmp}/user_model.py:unsupported", "relax cannot import"),
    ("{tmp}/missing.py:make", "does not exist"),
    ("no-such-model", "unknown model 'no-such-model'"),
])
def test_bad_user_models_are_refused_before_tuning(model, fragment, tmp_path, capsys):
    (tmp_path / "user_model.py").write_text(USER_MODEL)
    (tmp_path / "corrupt.pt2").write_bytes(b"PK\\x03\\x04 not really a zip")
    argv = ["tune", "--model", model.replace("{tmp}", str(tmp_path)), "--trials", "4", "--work-dir", str(tmp_path / "w")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "w").exists()  # refused before any tuning


@pytest.mark.parametrize("export, fragment", [
    ("{tmp}/missing/model.so", "does not exist"),
    ("/proc/1/model.so", "is not writable"),
])
def test_export_into_a_missing_or_read_only_folder_is_refused(export, fragment, tmp_path, capsys):
    assert main(["tune", "--model", "conv-block", "--export", export.replace("{tmp}", str(tmp_path))]) == 2
    assert fragment in capsys.readouterr().err
