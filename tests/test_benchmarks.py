"""The benchmark harness end to end: `benchmarks/run.py --quick --json` runs each kind of row for real
(two small held-out tasks, 4 trials, tiny checkpoints trained from the committed records), resumes,
and `benchmarks/report.py` turns its files into the results page."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import HERE_AVX2_2C

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from run import METHODS  # noqa: E402  (every row of the harness, as a full run takes them)

from tvm_tensorgpt import SearchConfig  # noqa: E402

# Rows that differ from the default's named row only in SearchConfig's numbers run its code with
# other numbers: the default (the report's baseline) and the time share's own path stand for them.
_SAME_BUT_SEARCH = replace(METHODS["tensorgpt-carry75"], search=SearchConfig())
QUICK_ROWS = [m for m, spec in METHODS.items()
              if m in ("tensorgpt-carry75", "tensorgpt-share10") or replace(spec, search=SearchConfig()) != _SAME_BUT_SEARCH]  # fmt: skip


def test_quick_benchmark_runs_each_kind_of_row_and_reports(tmp_path):
    data = tmp_path / "records"
    for profile in ("intel-xeon-avx2-1c", "intel-xeon-sse42-2c", "intel-xeon-sse42-1c"):  # a copy: collection may be appending
        (data / profile).mkdir(parents=True)
        for gz in (ROOT / "data" / "records" / profile).glob("*.json.gz"):
            shutil.copy(gz, data / profile / gz.name)
    command = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json", "--out", str(tmp_path / "run"),
               "--checkpoints", str(tmp_path / "ckpt"), "--data-dir", str(data), "--work-root", str(tmp_path),
               "--methods", ",".join(QUICK_ROWS)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)  # ~20 min on the 2-core Intel VM: a cell per row and task
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    cells = results["cells"]
    assert len(QUICK_ROWS) < len(METHODS) and "tensorgpt-pool512" not in QUICK_ROWS and "tensorgpt-adapt4" in QUICK_ROWS
    assert sorted({c["method"] for c in cells}) == sorted(QUICK_ROWS) and len(cells) == 2 * len(QUICK_ROWS)
    for cell in cells:
        curve = [v for v in cell["curve_us"] if v is not None]
        assert len(cell["curve_us"]) == cell["trials"] == 4
        assert curve and all(a >= b for a, b in zip(curve, curve[1:])), cell  # best-so-far never rises
        assert cell["best_us"] == curve[-1] and cell["ran"] >= 1 and cell["correct"] is True
        assert 1 <= len(cell["top"]) <= 3 and cell["top"][0]["us"] == pytest.approx(cell["best_us"])
        assert cell["time_s"]["build"] > 0 and cell["time_s"]["wall"] >= cell["time_s"]["build"]
        if not cell["method"].startswith("ansor"):
            assert cell["valid"] <= cell["generated"] and cell["valid"] >= 0.99 * cell["generated"]
        if METHODS[cell["method"]].strategy == "tensorgpt":  # every measurement named by what proposed it
            assert sum(cell["extra"]["measured_from"].values()) == 4 and len(cell["extra"]["best_from"]) == 1
    assert results["meta"]["quick"] and results["meta"]["profile"] == HERE_AVX2_2C
    checkpoints = results["meta"]["checkpoints"]  # which checkpoint each generating row used, and its records
    assert sorted(checkpoints) == sorted(m for m in QUICK_ROWS if METHODS[m].checkpoint)
    assert all(Path(c["folder"]).is_dir() and c["data"]["profiles"] for c in checkpoints.values())

    again = subprocess.run(command, capture_output=True, text=True, timeout=600)  # every cell is done: skipped
    assert again.returncode == 0
    key = lambda c: (c["method"], c["task"])  # noqa: E731
    assert sorted(json.loads(again.stdout)["cells"], key=key) == sorted(cells, key=key)
    assert "[1/" not in again.stderr

    # every cell's best schedules measured again, together, in two rounds; a re-run measures nothing twice
    remeasure = [sys.executable, str(ROOT / "benchmarks" / "remeasure.py"), "--run", str(tmp_path / "run"), "--repeats",
                 "1", "--rounds", "2"]  # fmt: skip
    done = subprocess.run(remeasure, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "run" / "remeasured.jsonl").read_text().splitlines()]
    assert len(rows) == len(cells) and all(r["best_us"] and len(r["remeasured_us"]) >= 1 for r in rows)
    for row in rows:  # a schedule's latency is the median of its rounds' values
        assert all(len(taken) == 2 and us == pytest.approx(sum(taken) / 2)
                   for taken, us in zip(row["rounds_us"], row["remeasured_us"]) if us is not None)  # fmt: skip
    assert {(r["method"], r["task"]) for r in rows} == {(c["method"], c["task"]) for c in cells}
    assert subprocess.run(remeasure, capture_output=True, text=True, timeout=300).returncode == 0
    assert len((tmp_path / "run" / "remeasured.jsonl").read_text().splitlines()) == len(cells)

    # the cells' measured records kept as reference data; a second pass adds nothing
    keep = [sys.executable, str(ROOT / "benchmarks" / "reference_from_run.py"), "--run", str(tmp_path / "run"),
            "--methods", "ansor", "--data-dir", str(tmp_path / "reference")]  # fmt: skip
    done = subprocess.run(keep, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    kept = (tmp_path / "reference" / HERE_AVX2_2C / "database_tuning_record.json").read_text().splitlines()
    assert max(c["ran"] for c in cells if c["method"] == "ansor") <= len(kept) <= 2 * 4
    again = subprocess.run(keep, capture_output=True, text=True, timeout=300)
    lines = again.stdout.splitlines()
    assert again.returncode == 0 and lines and all(": 0 ingested" in line for line in lines), again.stdout

    page = tmp_path / "results.md"
    report = [sys.executable, str(ROOT / "benchmarks" / "report.py"), "--run", str(tmp_path / "run"), "--out", str(page),
              "--img", str(tmp_path / "img")]  # fmt: skip
    assert subprocess.run(report, capture_output=True, text=True, timeout=300).returncode == 0
    text = page.read_text()
    for row in ("Ansor@1000", "TLM", "TLM-CT", "TensorGPT", "w/o HG", "w/o Routing", "w/o WA", "Quick run"):
        assert f"| {row} |" in text or row in text
    assert "re-measured together by `benchmarks/remeasure.py`" in text and "| TensorGPT | " in text
    assert "Where the TensorGPT strategy's measured candidates came from" in text
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


def _cell(method: str, task: str, curve: list[float], seed: int = 1) -> dict:
    return {"method": method, "task": task, "seed": seed, "trials": len(curve), "curve_us": curve, "best_us": curve[-1],
            "generated": None if method == "ansor" else len(curve), "valid": None if method == "ansor" else len(curve),
            "ran": len(curve), "correct": True, "time_s": {"build": 1.0, "wall": 2.0}}  # fmt: skip


def test_report_normalizes_to_ansor1000_where_it_finished(tmp_path):
    """Ansor@1000 cells come from their own harness run: a task the reference finished is
    normalized to it, the other to the best any method reached; the ablation rows use only the
    finished tasks; the trials Ansor's curve needs to reach TensorGPT's best are read off its curve."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    cells = [_cell("ansor", "a", [40.0, 20.0]), _cell("tensorgpt", "a", [30.0, 10.0]),
             _cell("ansor", "b", [8.0, 4.0]), _cell("tensorgpt", "b", [6.0, 5.0])]  # fmt: skip
    reference_curve = [50.0] * 9 + [9.0] * 990 + [5.0]  # reaches 10 us at trial 10, its best at 1000
    folder = tmp_path / "ansor1000"
    folder.mkdir()
    exhausted = {**_cell("ansor", "c", [3.0]), "trials": 1000}  # c: one distinct schedule, search ended
    lines = [_cell("ansor", "a", reference_curve), _cell("ansor", "b", [1.0] * 10), exhausted]  # b: a 10-trial run
    (folder / "results.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines) + '{"cut')
    reference = report.reference_cells(folder)
    assert sorted(reference) == ["a", "c"]
    (folder / "meta.json").write_text(json.dumps({"profile": "p-avx2-2c"}))
    assert sorted(report.reference_cells(folder, "p-avx2-2c")) == ["a", "c"]
    assert report.reference_cells(folder, "p-native-2c") == {}  # another device's latencies

    summary = report.summarise(cells, {"a": reference["a"]}, [1, 2])
    assert summary["reference_from_ansor1000"] == ["a"] and summary["reference_us"] == {"a": 5.0}
    # a: 5/10 for TensorGPT at 2 trials; b: best any = 4 -> 4/5
    assert abs(summary["methods"]["tensorgpt"]["normalized"][2] - (0.5 * 0.8) ** 0.5) < 1e-9
    assert summary["ablation"]["tensorgpt"]["normalized"] == pytest.approx({1: 5 / 30, 2: 0.5})
    assert summary["ablation"]["ansor@1000"]["ran_rate"] == 1.0
    assert summary["ansor1000_trials_to_match"]["tensorgpt"] == {"a": 10}
    assert summary["ansor1000_trials_to_match"]["ansor"] == {"a": 10}  # 20 us: first reached at trial 10
    assert report.trials_to_reach(reference_curve, 1.0) is None


def test_seed_comparison_uses_remeasured_latencies_and_brackets_the_mean():
    """Rows are compared per seed (geomean over tasks of baseline ÷ method latency), averaged over
    seeds, with the seeds' spread and a bootstrap interval; on re-measured values only when every
    cell has one."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    cells = []
    for seed, factor in ((1, 2.0), (2, 1.0)):  # TensorGPT 2x faster than Ansor in seed 1, equal in seed 2
        for task, us in (("a", 100.0), ("b", 10.0), ("c", 40.0)):
            cells += [_cell("ansor", task, [us], seed), _cell("tensorgpt", task, [us / factor], seed),
                      _cell("tlm-ct", task, [us / 4], seed)]  # fmt: skip
    tuned = report.seed_comparison(cells, {})
    assert tuned["source"] == "tuned" and tuned["seeds"] == [1, 2]
    row = tuned["rows"]["tensorgpt"]["ansor"]
    assert row["per_seed"] == pytest.approx({1: 2.0, 2: 1.0}) and row["mean"] == pytest.approx(1.5) and row["tasks"] == 3
    assert row["ci95"] == pytest.approx([1.5, 1.5])  # every task has the same ratio: no spread to resample
    assert tuned["rows"]["tensorgpt"]["tlm-ct"]["mean"] == pytest.approx((0.5 + 0.25) / 2)
    # re-measured: task a turns out 4x slower for TensorGPT in seed 1
    again = {(c["method"], c["task"], c["seed"]): {"best_us": c["best_us"] * (4 if (c["method"], c["task"], c["seed"])
                                                                               == ("tensorgpt", "a", 1) else 1)}
             for c in cells}  # fmt: skip
    remeasured = report.seed_comparison(cells, again)
    row = remeasured["rows"]["tensorgpt"]["ansor"]
    assert remeasured["source"] == "re-measured" and row["per_seed"][1] == pytest.approx((0.5 * 2 * 2) ** (1 / 3))
    assert row["ci95"][0] < row["mean"] < row["ci95"][1]
    assert "prior" not in remeasured["rows"]["tensorgpt"]  # a baseline that did not run is left out
    del again[("tlm-ct", "c", 2)]  # one cell not re-measured: the comparison falls back to the tuned values
    assert report.seed_comparison(cells, again)["source"] == "tuned"
    # a row added later that ran seed 1 only is compared on that seed
    late = cells + [_cell("prior", task, [us], 1) for task, us in (("a", 50.0), ("b", 5.0), ("c", 20.0))]
    assert report.seed_comparison(late, {})["rows"]["prior"]["ansor"]["per_seed"] == pytest.approx({1: 2.0})


def test_remeasure_again_keeps_every_earlier_batch(tmp_path):
    """`remeasure.py --again` (a row added after the batch): the earlier batches stay beside the run,
    numbered, and the run has no current batch, so every cell is measured anew."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import remeasure

    assert remeasure.set_aside(tmp_path) is None  # nothing measured yet: nothing to keep
    for batch in ("first", "second"):
        (tmp_path / remeasure.REMEASURED).write_text(batch + "\n")
        kept = remeasure.set_aside(tmp_path)
        assert kept is not None and kept.read_text() == batch + "\n"
        assert not (tmp_path / remeasure.REMEASURED).exists() and remeasure.read_remeasured(tmp_path) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["remeasured-1.jsonl", "remeasured-2.jsonl"]
    assert (tmp_path / "remeasured-1.jsonl").read_text() == "first\n"


def test_networks_section_reports_each_budget_and_where_kernels_came_from(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    def run(trials, tuned):
        meta = {"command": f"python benchmarks/run.py --suite networks --trials {trials}", "profile": "p-avx2-2c",
                "date": f"d{trials}", "commit": "c", "trials": trials, "seed": 1, "machine": {"cpu": "cpu"}}
        cells = [{"task": "resnet18", "method": "tensorgpt", "best_us": tuned, "correct": True, "time_s": {"wall": 90.0},
                  "extra": {"untuned_us": 50000.0, "eager_us": 2500.0, "kernels": 19, "kernels_measured": trials // 4,
                            "kernels_predicted": 19 - trials // 4}},
                 {"task": "resnet18", "method": "ansor", "best_us": None, "correct": None, "extra": {}}]
        return meta, cells  # fmt: skip

    runs = [run(0, 10000.0), run(64, 5000.0)]
    page = report.networks_section(runs, "img/results_networks.png")
    assert "| resnet18 | 0 | TensorGPT | 10.0 | 4.00 | 50.0 | 5.0 | 2.5 | 0 + 19 / 19 | 90 | True | `p-avx2-2c` |" in page
    assert "| resnet18 | 64 | TensorGPT | 5.0 | 2.00 | 50.0 | 10.0 | 2.5 | 16 + 3 / 19 | 90 | True |" in page
    assert "| resnet18 | 64 | Ansor | n/a | n/a | n/a | n/a | n/a | - replaced | n/a | None |" in page
    assert page.index("| resnet18 | 0 |") < page.index("| resnet18 | 64 |")
    assert report.networks_plot(runs, tmp_path) == "results_networks.png" and (tmp_path / "results_networks.png").exists()


def test_time_split_counts_every_search_scope_once():
    """TVM 0.27's evolutionary search reports Mutation, Misc and PredictNormalizedScore side by side
    under EvoSearch/Evolve/ (no parent scope): generation is every outermost search scope except the
    cost model's prediction, never negative (scopes measured in a real run)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run

    evolutionary = {"EvoSearch/Evolve/Misc": 0.711, "EvoSearch/Evolve/Misc/CopyMeasuredWorkloads": 0.0,
                    "EvoSearch/Evolve/Mutation": 10.427, "EvoSearch/Evolve/PredictNormalizedScore": 0.199,
                    "EvoSearch/PickBestFromDatabase": 0.026, "EvoSearch/PickWithEpsGreedy": 0.002,
                    "EvoSearch/SampleInitPopulation": 2.644, "MeasureCallback/UpdateCostModel": 0.274,
                    "SendToBuilder": 6.808, "SendToRunner": 3.951, "JoinRunnerFutures": 0.0, "Total": 30.907}  # fmt: skip
    split = run._split_time(evolutionary)
    assert split["generation"] == pytest.approx(0.711 + 10.427 + 0.026 + 0.002 + 2.644)
    assert split["cost_model"] == pytest.approx(0.199 + 0.274)
    assert split["build"] == 6.808 and split["run"] == 3.951 and split["total"] == 30.907
    tensorgpt = {"TensorGPT/Generate": 3.0, "TensorGPT/Postprocess": 0.5, "TensorGPT/CostModel": 0.25, "Total": 9.0}
    assert run._split_time(tensorgpt)["generation"] == pytest.approx(3.5)
