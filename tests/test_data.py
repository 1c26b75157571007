"""Workloads of the five networks, resumable collection, ingest of users' logs, RPC on loopback."""

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import tvm
from conftest import HERE_SSE_1C, kill_when_recorded, record_lines
from tvm.s_tir import meta_schedule as ms

from tvm_tensorgpt.cli import main
from tvm_tensorgpt.costmodel.model import DEFAULT_COST_MODEL
from tvm_tensorgpt.data.collect import (
    CollectConfig,
    RemoteDevice,
    collect,
    first_measured,
    open_database,
    records_per_task,
)
from tvm_tensorgpt.data.ingest import ingest
from tvm_tensorgpt.data.stats import data_fingerprint
from tvm_tensorgpt.data.split import (
    HELDOUT_HOST,
    HELDOUT_HOSTS,
    HELDOUT_TASKS,
    heldout_host_of,
    heldout_tasks,
    is_heldout,
    training_tasks,
)
from tvm_tensorgpt.hardware import get_profile, recorded_machines, this_machine
from tvm_tensorgpt.model.checkpoint import DEFAULT_CHECKPOINT
from tvm_tensorgpt.workloads import get_workload
from tvm_tensorgpt.workloads.tasks import get_task, load_tasks

SMALL = ["resnet18/fused_matmul_add13", "resnet18/max_pool2d"]  # spaces with 12+ distinct schedules


def test_split_keeps_representative_subgraphs_out_of_training():
    held = heldout_tasks()
    assert len(held) >= 12
    assert {t.kind for t in held} >= {"conv2d", "depthwise_conv2d", "conv3d", "dense", "batch_matmul"}
    assert not {t.name for t in training_tasks()} & set(HELDOUT_TASKS)
    assert len(training_tasks()) + len(held) == len(load_tasks())
    # every held-out name works as a tune workload
    for name in HELDOUT_TASKS:
        assert get_workload(name).build() is not None


def test_each_machines_heldout_isa_never_trains():
    """A held-out host holds out its machine's vector ISA at every core count, and nothing else."""
    assert heldout_host_of("intel-xeon") == "intel-xeon-native-2c" and heldout_host_of("amd-zen3") == HELDOUT_HOST
    assert heldout_host_of("amd-zen5") == "amd-zen5-avx2-2c" and heldout_host_of("amd-zen4") is None
    assert all(is_heldout(name) for name in HELDOUT_HOSTS)
    assert is_heldout("intel-xeon-native-1c") and is_heldout("amd-zen3-native-1c")  # Zen 3's native ISA is AVX2
    assert is_heldout("amd-zen5-avx2-1c")
    assert not any(map(is_heldout, ["intel-xeon-avx2-2c", "intel-xeon-sse42-1c", "amd-zen3-sse42-2c",
                                    "amd-zen5-native-2c"]))  # fmt: skip
    trained = json.loads((DEFAULT_COST_MODEL / "meta.json").read_text())["trained"]["profiles"]
    trained += json.loads((DEFAULT_CHECKPOINT / "config.json").read_text())["model"]["experts"]
    assert trained and not any(map(is_heldout, trained))


def test_collection_resumes_after_kill(tmp_path):
    directory = tmp_path / HERE_SSE_1C
    records = directory / "database_tuning_record.json"
    command = [sys.executable, "-m", "tvm_tensorgpt", "collect", "--profile", HERE_SSE_1C, "--tasks",
               ",".join(SMALL), "--trials", "12", "--chunk", "6", "--data-dir", str(tmp_path)]  # fmt: skip
    before = kill_when_recorded(command, directory, 4)
    assert 4 <= len(before) < 24, "the collection should have been killed part-way"
    with open(records, "a") as f:
        f.write('[0, [[["GetSBlock"')  # a write cut by the kill
    subprocess.run(command, check=True, timeout=600, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = record_lines(directory)
    assert after[: len(before)] == before  # nothing measured was lost
    counts = records_per_task(open_database(directory), [get_task(n) for n in SMALL])
    assert counts == {n: 12 for n in SMALL}  # the re-run measured only what was missing
    provenance = json.loads((directory / "provenance.json").read_text())
    assert len(provenance["runs"]) == 2 and provenance["runs"][0]["tvm"] == tvm.__version__
    assert provenance["machine"] == provenance["runs"][0]["machine"]["key"] == this_machine().key
    assert gzip.decompress((records.parent / "database_tuning_record.json.gz").read_bytes()).decode().splitlines() == after


def test_ctrl_c_ends_a_collection_after_its_chunk(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) ends `collect` cleanly after the
    chunk being measured: exit 0, whole chunks kept and packed, no task marked measured out (TVM
    swallows an exception raised inside a tune, so an interrupted chunk once looked exhausted)."""
    import signal

    directory = tmp_path / HERE_SSE_1C
    command = [sys.executable, "-m", "tvm_tensorgpt", "collect", "--profile", HERE_SSE_1C, "--tasks",
               ",".join(SMALL), "--trials", "24", "--chunk", "6", "--data-dir", str(tmp_path)]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    deadline = time.time() + 300
    while len(record_lines(directory)) < 6 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert "stopping after the chunk being measured" in err
    kept = record_lines(directory)
    assert 6 <= len(kept) < 48 and len(kept) % 6 == 0
    packed = gzip.decompress((directory / "database_tuning_record.json.gz").read_bytes()).decode().splitlines()
    assert packed == kept
    assert json.loads((directory / "provenance.json").read_text())["exhausted"] == []


def test_self_training_collection_measures_with_the_tensorgpt_search(tmp_path, capsys):
    """`collect --strategy tensorgpt`: the generator proposes and the pretrained cost model ranks;
    every chunk measures what it was asked for, though the strategy counts the task's records in the
    database as trials done; an unknown strategy is refused before anything is measured."""
    task = SMALL[0]
    argv = ["collect", "--profile", HERE_SSE_1C, "--tasks", task, "--trials", "8", "--chunk", "4",
            "--data-dir", str(tmp_path), "--strategy", "tensorgpt"]  # fmt: skip
    assert main(argv) == 0
    directory = tmp_path / HERE_SSE_1C
    database = open_database(directory)
    assert records_per_task(database, [get_task(task)]) == {task: 8}  # two chunks of 4
    assert all(r.run_secs for r in database.get_all_tuning_records())
    run = json.loads((directory / "provenance.json").read_text())["runs"][-1]
    assert run["strategy"] == "tensorgpt" and run["records_after"] == 8
    try:
        CollectConfig(strategy="random")
    except ValueError as err:
        assert "evolutionary, tensorgpt" in str(err)
    else:
        raise AssertionError("an unknown strategy was accepted")


def _work_dir_with_records(tmp_path) -> str:
    work_dir = tmp_path / "user_logs"
    ms.tune_tir(get_workload("matmul-128").build(), tvm.target.Target(get_profile("intel-xeon-sse42-1c").target),
                str(work_dir), max_trials_global=4, num_trials_per_iter=4, strategy="replay-trace",
                builder="tensorgpt", num_tuning_cores=1)  # fmt: skip
    return str(work_dir)


def test_first_measured_keeps_the_measurement_order(tmp_path):
    """A JSON database hands records back fastest first; what a tune of N trials had seen is its
    first N records in the order they were written."""
    shutil.copytree("data/reference/intel-xeon-avx2-2c", tmp_path / "reference")
    reference = open_database(tmp_path / "reference")
    workload = reference.get_all_tuning_records()[0].workload
    fastest_first = list(reference.get_top_k(workload, 3))
    database = open_database(tmp_path / "db")
    committed = database.commit_workload(workload.mod)
    for record in reversed(fastest_first):  # slowest written first
        database.commit_tuning_record(
            ms.database.TuningRecord(record.trace, committed, record.run_secs, record.target, record.args_info)
        )
    seen = first_measured(tmp_path / "db", 2).get_all_tuning_records()
    assert sorted(_mean_secs(r) for r in seen) == sorted(_mean_secs(r) for r in fastest_first[1:])
    assert len(first_measured(tmp_path / "db", 10).get_all_tuning_records()) == 3


def _mean_secs(record) -> float:
    return sum(float(s) for s in record.run_secs) / len(record.run_secs)


def test_ingest_a_work_dir_and_a_corrupted_one(tmp_path, capsys):
    work_dir = _work_dir_with_records(tmp_path)
    data = tmp_path / "data"
    report = ingest(work_dir, get_profile("intel-xeon-sse42-1c"), data)
    assert report.ingested == 4 and not report.skipped
    again = ingest(work_dir, get_profile("intel-xeon-sse42-1c"), data)
    assert again.ingested == 0 and again.duplicates == 4
    provenance = json.loads((data / "intel-xeon-sse42-1c" / "provenance.json").read_text())
    assert provenance["machine"] == "intel-xeon" and [r["ingested"]["ingested"] for r in provenance["runs"]] == [4, 0]
    # records measured for another target (mcpu, cores) than the profile's: refused, nothing written
    for profile in ("intel-xeon-avx2-1c", "intel-xeon-sse42-2c"):
        assert main(["ingest", work_dir, "--profile", profile, "--data-dir", str(data)]) == 2
        err = capsys.readouterr().err
        assert '"mcpu": "nehalem"' in err and "nothing was written" in err and len(err.strip().splitlines()) == 1
        assert not (data / profile).exists()
    # corrupt it: garbage, a cut line, a record for a missing workload; then a foreign (cuda) record
    path = os.path.join(work_dir, "database_tuning_record.json")
    good = open(path).read().splitlines()[0]
    index, body = json.loads(good)
    foreign = json.loads(good)
    foreign[1][2] = {"kind": "cuda", "arch": "sm_87"}
    with open(path, "a") as f:
        f.write("this is not json\n")
        f.write(json.dumps([7, body]) + "\n")
        f.write(good[: len(good) // 2] + "\n")
    assert main(["ingest", work_dir, "--profile", "intel-xeon-sse42-1c", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "read 7 records: 0 ingested, 4 already there" in out
    assert "not a JSON record" in out and "missing or broken workload" in out
    with open(path, "a") as f:
        f.write(json.dumps(foreign) + "\n")
    assert main(["ingest", work_dir, "--profile", "intel-xeon-sse42-1c", "--data-dir", str(data)]) == 2
    assert '"kind": "cuda"' in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_collection_over_rpc_on_loopback(tmp_path):
    from tvm import rpc

    tracker_port, server_port = _free_port(), _free_port()
    procs = [
        subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port",
                          str(tracker_port), "--port-end", str(tracker_port + 1)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]  # fmt: skip
    try:
        time.sleep(2)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_server", "--tracker", f"127.0.0.1:{tracker_port}", "--key",
             "loopback", "--host", "127.0.0.1", "--port", str(server_port), "--port-end", str(server_port + 1)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline:
            summary = rpc.connect_tracker("127.0.0.1", tracker_port).summary()
            if any(q["key"] == "loopback" for q in summary.get("server_info", [])):
                break
            time.sleep(0.5)
        remote = RemoteDevice(f"127.0.0.1:{tracker_port}", "loopback")
        counts = collect(get_profile(HERE_SSE_1C), [get_task(SMALL[0])], tmp_path,
                         CollectConfig(trials=4, chunk=4), remote=remote)  # fmt: skip
        assert counts == {SMALL[0]: 4}
        database = open_database(tmp_path / HERE_SSE_1C)
        measured = [r for r in database.get_all_tuning_records() if r.run_secs]
        assert len(measured) == 4
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_data_stats_json(tmp_path, capsys):
    (tmp_path / "records" / "p1").mkdir(parents=True)
    (tmp_path / "records" / "p1" / "database_workload.json").write_text('["1", "x"]\n["2", "y"]\n')
    rows = ['[0, [[], [0.001], {}, []]]', '[1, [[], [0.002], {}, []]]', '[1, [[], null, {}, []]]']
    (tmp_path / "records" / "p1" / "database_tuning_record.json").write_text("\n".join(rows) + "\n")
    assert main(["data", "stats", "--json", "--data-dir", str(tmp_path / "records"),
                 "--reference-dir", str(tmp_path / "none")]) == 0  # fmt: skip
    stats = json.loads(capsys.readouterr().out)
    assert stats["profiles"] == {"p1": {"records": 3, "measured": 2, "tasks": 2, "machine": "", "heldout": False,
                                        "by_search": {}}}  # fmt: skip
    assert stats["sources"] == {"profiles": 1, "records": 3, "machines": []}
    assert stats["heldout_profile"] == HELDOUT_HOST and stats["heldout_tasks"] == list(HELDOUT_TASKS)
    assert stats["heldout_profiles"] == list(HELDOUT_HOSTS)
    with open(tmp_path / "records" / "p1" / "database_tuning_record.json", "a") as f:
        f.write('[1, [[], [0.003]\n"just a string"\n')  # a cut line and a line that is not a record
    assert main(["data", "stats", "--json", "--data-dir", str(tmp_path / "records")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["profiles"]["p1"]["corrupt_lines"] == 2
    assert "p1: 2 line(s) of its records are not valid records" in captured.err
    runs = [{"records_before": 0, "records_after": 2}, {"strategy": "tensorgpt", "records_before": 2, "records_after": 3},
            {"ingested": {"read": 5, "ingested": 4}}]  # fmt: skip
    (tmp_path / "records" / "p1" / "provenance.json").write_text(json.dumps({"machine": "m", "runs": runs}))
    assert main(["data", "stats", "--data-dir", str(tmp_path / "records")]) == 0
    assert "machine m; evolutionary 2, tensorgpt 1, ingested 4" in capsys.readouterr().out


def test_data_fingerprint_names_the_records_and_their_commit(tmp_path):
    """A model's provenance names its data: the same digest for a committed folder and an unpacked
    copy of it, the commit only while the committed files are what was read."""
    repo, copy = tmp_path / "repo", tmp_path / "copy" / "p1"
    lines = {"database_workload.json": '["1", "x"]\n', "database_tuning_record.json": '[0, [[], [0.001], {}, []]]\n'}
    (repo / "p1").mkdir(parents=True)
    copy.mkdir(parents=True)
    for name, text in lines.items():
        (repo / "p1" / f"{name}.gz").write_bytes(gzip.compress(text.encode()))
        (copy / name).write_text(text)
    (repo / ".gitignore").write_text("*/database_*.json\n")  # as the project's: working copies
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    committed = data_fingerprint(repo, ["p1"])
    assert committed["commit"] == head and committed["profiles"] == ["p1"]
    assert data_fingerprint(copy.parent, ["p1"]) == {**committed, "commit": None}
    for name, text in lines.items():  # unpacked by a reader, unchanged: still the commit
        (repo / "p1" / name).write_text(text)
    assert data_fingerprint(repo, ["p1"]) == committed
    (repo / "p1" / "database_tuning_record.json").write_text(lines["database_tuning_record.json"] + '[0, [[], [0.002], {}, []]]\n')
    grown = data_fingerprint(repo, ["p1"])  # an unpacked working copy with one more record
    assert grown["commit"] is None and grown["sha256"] != committed["sha256"]


def test_collection_refuses_another_machines_profile(tmp_path, capsys):
    """Records of two machines never share a profile: collecting onto another machine's profile, or
    into a folder another machine measured, is a one-line error and writes nothing."""
    other = next(m for m in recorded_machines() if m.key != this_machine().key)
    argv = ["collect", "--tasks", SMALL[0], "--trials", "2", "--data-dir", str(tmp_path)]
    assert main(argv + ["--profile", f"{other.key}-sse42-1c"]) == 2
    err = capsys.readouterr().err.strip()
    assert other.key in err and this_machine().key in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())
    folder = tmp_path / HERE_SSE_1C
    folder.mkdir()
    provenance = json.dumps({"profile": HERE_SSE_1C, "runs": [{"machine": {"key": other.key}}]})
    (folder / "provenance.json").write_text(provenance)
    assert main(argv + ["--profile", HERE_SSE_1C]) == 2
    assert f"records of machine {other.key}" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["provenance.json"]
    assert (folder / "provenance.json").read_text() == provenance
