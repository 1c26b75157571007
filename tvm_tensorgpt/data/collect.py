"""Measured data collection: MetaSchedule's evolutionary search (or TensorGPT's own search, for
self-training) over the training tasks, per profile.

Records go to one MetaSchedule JSON database per profile (``<data_dir>/<profile>/``, MetaSchedule's
own layout: ``database_workload.json`` + ``database_tuning_record.json``), next to a
``provenance.json`` (TVM version, profile, target, machine, dates, command, counts per run).

Collection runs in passes: each pass gives every task ``chunk`` more trials (one tuning call with
its own seed), so an interrupted run still covers many tasks. It is resumable: what a task already
has in the database counts, a trailing line cut by a kill is dropped before the database opens, and
a re-run only measures what is missing (a kill loses at most the batch being measured; Ctrl-C ends
the run after it).
"""

from __future__ import annotations

import contextlib
import datetime
import gzip
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import tvm
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.search_strategy import EvolutionarySearch
from tvm.target import Target

from ..hardware import HardwareProfile, check_this_machine, this_machine
from ..hardware.runner import local_runner
from ..tvm_glue import DB_FILES, TVM_ERRORS, load_tensor_intrinsics, local_builder, repair_database
from ..workloads.tasks import Task

logger = logging.getLogger(__name__)
# the .json.gz copies are refreshed at most this often (a large profile's take ~1 s to write); the
# plain JSON files, which a resumed run reads first, get every record at once
PACK_EVERY_S = 120.0
STRATEGIES = ("evolutionary", "tensorgpt")  # "tensorgpt" resolves through the plugin's registration


@dataclass(frozen=True)
class RemoteDevice:
    """A device behind a TVM RPC tracker (a Jetson, a GPU box): ``tracker`` is "host:port"."""

    tracker: str
    key: str
    session_timeout_sec: int = 60

    def runner(self) -> ms.runner.RPCRunner:
        host, _, port = self.tracker.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"tracker must be host:port, e.g. 127.0.0.1:9190, not {self.tracker!r}")
        config = ms.runner.RPCConfig(tracker_host=host, tracker_port=int(port), tracker_key=self.key,
                                     session_timeout_sec=self.session_timeout_sec)  # fmt: skip
        return ms.runner.RPCRunner(rpc_config=config, max_workers=1)


@dataclass(frozen=True)
class CollectConfig:
    trials: int = 64  # per task, in total
    chunk: int = 32  # trials per task per pass (one tuning call)
    # evolutionary population: TVM's default 2048 costs minutes per round here, and until its cost
    # model has 100 samples (a chunk never does) the search picks among it at random anyway
    population: int = 128
    seed: int = 0
    max_records: int | None = None  # stop once the selected tasks hold this many records in total
    # "evolutionary" explores (its fresh XGB ranks at random within a chunk, so records are close
    # to random draws); "tensorgpt" is the self-training round: the generator proposes, the
    # pretrained cost model ranks and the best measured are refined, so records gather near each
    # task's best (expert iteration, as TLM does)
    strategy: str = "evolutionary"
    cost_model: str | None = None  # None: the strategy's own ("xgb" for evolutionary, else "tensorgpt")

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown collection strategy {self.strategy!r}; known: {', '.join(STRATEGIES)}")


def read_lines(path: Path, packed_only: bool = False) -> list[str]:
    """The non-empty lines of a database file, or of its ``.json.gz`` copy where it is missing (or
    always, with ``packed_only``)."""
    packed = path.with_name(path.name + ".gz")
    if path.exists() and not packed_only:
        text = path.read_text(encoding="utf-8", errors="replace")
    elif packed.exists():
        text = gzip.decompress(packed.read_bytes()).decode("utf-8", errors="replace")
    else:
        return []
    return [line for line in text.splitlines() if line.strip()]


def unpack(directory: Path) -> None:
    """Restore the working JSON files from committed ``.json.gz`` copies when they are missing."""
    for name in DB_FILES:
        packed, plain = directory / f"{name}.gz", directory / name
        if packed.exists() and not plain.exists():
            with gzip.open(packed, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)


def pack(directory: Path) -> None:
    """Write ``.json.gz`` copies of the database files (what gets committed)."""
    for name in DB_FILES:
        plain = directory / name
        if plain.exists():
            with open(plain, "rb") as src, gzip.open(directory / f"{name}.gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)


def open_database(directory: Path) -> ms.database.JSONDatabase:
    directory.mkdir(parents=True, exist_ok=True)
    unpack(directory)
    repair_database(directory)
    return ms.database.JSONDatabase(work_dir=str(directory), module_equality="structural")


def first_measured(directory: Path, per_workload: int) -> ms.database.MemoryDatabase:
    """The first ``per_workload`` records of each workload of a database folder, in the order they
    were measured (a JSON database hands its records back sorted by speed): what a tune of that many
    trials had seen."""
    unpack(directory)
    repair_database(directory)
    workloads = [ms.database.Workload.from_json(json.loads(line)) for line in read_lines(directory / DB_FILES[0])]
    database, taken = ms.database.MemoryDatabase(module_equality="structural"), [0] * len(workloads)
    for line in read_lines(directory / DB_FILES[1]):
        index, body = json.loads(line)
        if taken[index] < per_workload:
            taken[index] += 1
            workload = database.commit_workload(workloads[index].mod)
            database.commit_tuning_record(ms.database.TuningRecord.from_json(body, workload))
    return database


def records_per_task(database: ms.database.Database, tasks: Sequence[Task]) -> dict[str, int]:
    """Records (measured or failed) each task has in the database."""
    names = {}
    for task in tasks:
        if database.has_workload(task.mod):
            names[database.commit_workload(task.mod)] = task.name
    counts = dict.fromkeys((t.name for t in tasks), 0)
    for record in database.get_all_tuning_records():
        name = names.get(record.workload)
        if name is not None:
            counts[name] += 1
    return counts


def _record_lines(directory: Path) -> int:
    path = directory / DB_FILES[1]
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def _seed(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode()) % (2**31 - 2) + 1


def _tune_chunk(task: Task, profile: HardwareProfile, database: ms.database.Database, builder: ms.Builder,
                runner: object, have: int, trials: int, config: CollectConfig, pass_index: int,
                work_dir: Path) -> None:  # fmt: skip
    """``trials`` more records for a task that has ``have``, measured as one batch."""
    target = Target(profile.target)
    # the search and its cost model run on every core between batches (a 1-core profile's search
    # kept the second core idle); only the runner is pinned to the profile's cores
    cores = os.cpu_count() or 1
    evolutionary = config.strategy == "evolutionary"
    strategy = EvolutionarySearch(population_size=config.population) if evolutionary else config.strategy
    cost_model = config.cost_model or ("xgb" if evolutionary else "tensorgpt")
    context = ms.TuneContext(
        mod=task.mod,
        target=target,
        space_generator="post-order-apply",
        search_strategy=strategy,
        task_name=task.name,
        rand_state=_seed(config.seed, profile.name, task.name, pass_index),
        num_threads=cores,
    ).clone()
    ms.tune_tasks(
        tasks=[context],
        task_weights=[1.0],
        work_dir=str(work_dir),
        # the TensorGPT strategy counts the task's records in the database as trials done
        max_trials_global=trials if evolutionary else have + trials,
        num_trials_per_iter=trials,  # the chunk is one measured batch
        builder=builder,
        runner=runner,  # type: ignore[arg-type]
        database=database,
        cost_model=ms.CostModel.create(cost_model, num_tuning_cores=cores),
        task_scheduler="round-robin",
    )


@contextlib.contextmanager
def _stop_on_sigint(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C (SIGINT): the first ends the collection after the chunk being measured; a second
    abandons that chunk. Either way the run ends normally (its records packed, no task wrongly
    marked measured out). TVM turns an exception raised inside a tune into an error the chunk loop
    survives, which is why a flag and not the exception ends the loop."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def again(*_: object) -> None:
        raise KeyboardInterrupt

    def first(*_: object) -> None:
        stop.set()
        print("collect: stopping after the chunk being measured (Ctrl-C again to drop it)", file=sys.stderr,
              flush=True)  # fmt: skip
        signal.signal(signal.SIGINT, again)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def collect(profile: HardwareProfile, tasks: Sequence[Task], data_dir: str | Path,
            config: CollectConfig = CollectConfig(), command: str | None = None,
            remote: RemoteDevice | None = None) -> dict[str, int]:  # fmt: skip
    """Measure ``tasks`` on ``profile`` until each has ``config.trials`` records; returns the counts.

    Locally (a host profile, runner pinned to its cores) or, with ``remote``, on the device behind
    an RPC tracker (builds stay on this machine and must target the device).
    """
    from tqdm import tqdm

    if profile.kind != "cpu" and remote is None:
        raise ValueError(f"{profile.name} is a GPU profile: collect on the device over RPC (--rpc, docs/data.md)")
    directory = Path(data_dir) / profile.name
    if remote is None:
        check_this_machine(profile, "collect onto")
        _check_same_machine(directory)
    database = open_database(directory)
    load_tensor_intrinsics(Target(profile.target))
    counts = records_per_task(database, tasks)
    before = sum(counts.values())
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    exhausted = _exhausted(directory)
    _write_provenance(directory, profile, config, command, started, before, before, exhausted)
    runner = remote.runner() if remote is not None else local_runner(profile)
    builder = local_builder(max_workers=os.cpu_count() or 1)  # one for the whole run: its workers are kept
    missing = sum(max(0, config.trials - c) for c in counts.values())
    if config.max_records is not None:
        missing = max(0, min(missing, config.max_records - before))
    passes = -(-config.trials // config.chunk)
    packed = time.perf_counter()
    stop = threading.Event()
    try:
        with _stop_on_sigint(stop), tqdm(total=missing, desc=f"collect {profile.name}", unit="trial",
                                         file=sys.stderr, dynamic_ncols=True, mininterval=5) as bar:  # fmt: skip
            for pass_index in range(passes):
                goal = min(config.trials, (pass_index + 1) * config.chunk)
                for task in tasks:
                    need = goal - counts[task.name]
                    if need <= 0 or task.name in exhausted:
                        continue
                    if stop.is_set() or (config.max_records is not None and sum(counts.values()) >= config.max_records):
                        break
                    bar.set_postfix_str(task.name[-40:], refresh=False)
                    start = time.perf_counter()
                    lines = _record_lines(directory)
                    try:
                        _tune_chunk(task, profile, database, builder, runner, counts[task.name], need, config, pass_index,
                                    directory)  # fmt: skip
                        failed = False
                    except TVM_ERRORS as err:
                        failed = True
                        if not stop.is_set():
                            logger.warning("%s: tuning failed, skipped this pass: %s", task.name, str(err)[:500])
                    # the chunk's records are the lines it appended (re-reading the database grows with it)
                    now = counts[task.name] + _record_lines(directory) - lines
                    if not failed and not stop.is_set() and now - counts[task.name] < max(1, need // 4):
                        # the search found (almost) nothing new: a small space, measured out
                        exhausted.add(task.name)
                    bar.update(max(0, min(now, config.trials) - counts[task.name]))
                    counts[task.name] = now
                    logger.info("%s: %d records (%.1f s)", task.name, now, time.perf_counter() - start)
                    _write_provenance(directory, profile, config, command, started, before, sum(counts.values()),
                                      exhausted)  # fmt: skip
                    if time.perf_counter() - packed > PACK_EVERY_S:
                        pack(directory)
                        packed = time.perf_counter()
    finally:  # a stopped run still leaves its records in the committed copies
        pack(directory)
    return counts


def _check_same_machine(directory: Path) -> None:
    """Refuse to add this machine's records to a database another machine measured."""
    path = directory / "provenance.json"
    if not path.exists():
        return
    here = this_machine()
    for run in json.loads(path.read_text()).get("runs", []):
        other = run.get("machine", {}).get("key")
        if other is not None and other != here.key:
            raise ValueError(f"{directory} holds records of machine {other}, but this machine is {here.key}: "
                             "collect into a profile of this machine (nothing was written)")  # fmt: skip


def _exhausted(directory: Path) -> set[str]:
    """Tasks whose design space a previous chunk measured out (recorded in provenance.json)."""
    path = directory / "provenance.json"
    return set(json.loads(path.read_text()).get("exhausted", [])) if path.exists() else set()


def _write_provenance(directory: Path, profile: HardwareProfile, config: CollectConfig, command: str | None,
                      started: str, before: int, after: int, exhausted: set[str]) -> None:  # fmt: skip
    here = this_machine()
    run = {
        "command": command or " ".join(sys.argv),
        "strategy": config.strategy,
        "started": started,
        "updated": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tvm": tvm.__version__,
        "target": profile.target,
        "machine": {"key": here.key, "cpu": here.cpu, "family": here.family, "model": here.model,
                    "cores": os.cpu_count()},
        "records_before": before,
        "records_after": after,
    }
    append_provenance_run(directory, profile, run, exhausted)


def append_provenance_run(directory: Path, profile: HardwareProfile, run: dict, exhausted: set[str]) -> None:
    """Record ``run`` (a collection or an ingest) in the profile's ``provenance.json``; a run with the
    same ``started`` as the last one replaces it (a collection updates its entry as it goes).
    ``exhausted`` tasks join those already recorded, so later collections skip them."""
    path = directory / "provenance.json"
    data = json.loads(path.read_text()) if path.exists() else {"profile": profile.name, "runs": []}
    runs = data["runs"]
    if runs and "started" in run and runs[-1].get("started") == run["started"]:
        runs[-1] = run
    else:
        runs.append(run)
    data["profile_specs"] = profile.raw()
    data.setdefault("machine", profile.machine)
    data["exhausted"] = sorted(set(data.get("exhausted", [])) | exhausted)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
