"""The benchmark harness end to end: `benchmarks/run.py --quick --json` runs every method for real
(two small held-out tasks, 4 trials, tiny checkpoints trained from the committed records), resumes,
and `benchmarks/report.py` turns its files into the results page."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["ansor", "tlm", "tlm-ct", "tensorgpt", "no-hg", "no-routing", "no-wa"]


def test_quick_benchmark_runs_every_method_and_reports(tmp_path):
    data = tmp_path / "records"
    for profile in ("host-avx2-1c", "host-sse42-2c", "host-sse42-1c"):  # a copy: collection may be appending
        (data / profile).mkdir(parents=True)
        for gz in (ROOT / "data" / "records" / profile).glob("*.json.gz"):
            shutil.copy(gz, data / profile / gz.name)
    command = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json", "--out", str(tmp_path / "run"),
               "--checkpoints", str(tmp_path / "ckpt"), "--data-dir", str(data), "--work-root", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    cells = results["cells"]
    assert sorted({c["method"] for c in cells}) == sorted(METHODS) and len(cells) == 2 * len(METHODS)
    for cell in cells:
        curve = [v for v in cell["curve_us"] if v is not None]
        assert len(cell["curve_us"]) == cell["trials"] == 4
        assert curve and all(a >= b for a, b in zip(curve, curve[1:])), cell  # best-so-far never rises
        assert cell["best_us"] == curve[-1] and cell["ran"] >= 1 and cell["correct"] is True
        assert cell["time_s"]["build"] > 0 and cell["time_s"]["wall"] >= cell["time_s"]["build"]
        if cell["method"] != "ansor":
            assert cell["valid"] <= cell["generated"] and cell["valid"] >= 0.99 * cell["generated"]
    assert results["meta"]["quick"] and results["meta"]["profile"] == "host-avx2-2c"

    again = subprocess.run(command, capture_output=True, text=True, timeout=600)  # every cell is done: skipped
    assert again.returncode == 0
    key = lambda c: (c["method"], c["task"])  # noqa: E731
    assert sorted(json.loads(again.stdout)["cells"], key=key) == sorted(cells, key=key)
    assert "[1/" not in again.stderr

    page = tmp_path / "results.md"
    report = [sys.executable, str(ROOT / "benchmarks" / "report.py"), "--run", str(tmp_path / "run"), "--out", str(page),
              "--img", str(tmp_path / "img")]  # fmt: skip
    assert subprocess.run(report, capture_output=True, text=True, timeout=300).returncode == 0
    text = page.read_text()
    for row in ("Ansor@1000", "TLM", "TLM-CT", "TensorGPT", "w/o HG", "w/o Routing", "w/o WA", "Quick run"):
        assert f"| {row} |" in text or row in text
    assert (tmp_path / "img" / "results_curves.png").stat().st_size > 0


def test_quick_cuda_validity_benchmark(tmp_path):
    """`benchmarks/validity.py --quick --json`: CUDA candidates for Jetson Orin from the prior with
    and without the device masks and from the bundled checkpoint, counted through VerifyGPUCode
    (and nvcc when it can target sm_87); the page and plot are written, a rerun skips every cell."""
    command = [sys.executable, str(ROOT / "benchmarks" / "validity.py"), "--quick", "--json",
               "--out", str(tmp_path / "validity"), "--docs", str(tmp_path / "docs")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)["jetson-orin"]
    assert sorted(summary) == ["masks", "random", "tensorgpt"]
    for row in summary.values():
        assert row["generated"] == 12 and row["tasks"] == 2
    assert summary["masks"]["verified"] >= summary["random"]["verified"]
    assert summary["masks"]["share"]["verified"] >= 0.9 and summary["tensorgpt"]["share"]["verified"] >= 0.9
    cells = (tmp_path / "validity" / "cells.jsonl").read_text().splitlines()
    assert len(cells) == 6
    page = (tmp_path / "docs" / "validity.md").read_text()
    assert "| jetson-orin | tensorgpt | 2 | 12 |" in page and (tmp_path / "docs" / "img" / "validity_gpu.png").exists()
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and len((tmp_path / "validity" / "cells.jsonl").read_text().splitlines()) == 6
