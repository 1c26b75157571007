"""Bring your own logs: any MetaSchedule work_dir becomes training data for a profile.

The files are read line by line (MetaSchedule's own loader stops at the first bad line); every
line is checked and either ingested or reported with its reason: not JSON, a workload that does not
load, a record pointing at a missing workload, a trace that does not parse or does not replay on
its workload. Records already in the profile's database are not added again. A record measured
for another target than the profile's (kind, mcpu, cores, GPU arch) refuses the whole ingest before
anything is written: its latency says nothing about the profile's device. A ``.json.gz`` copy is
read where the plain file is missing (the form committed data takes); the ingest is appended to the
profile's ``provenance.json`` with the source's own provenance, if it has one.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule.database import TuningRecord, Workload

from ..hardware import HardwareProfile
from ..tvm_glue import DB_FILES, TVM_ERRORS, device_key
from .collect import append_provenance_run, open_database, pack, read_lines


@dataclass
class IngestReport:
    read: int = 0
    ingested: int = 0
    duplicates: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> count
    examples: dict[str, str] = field(default_factory=dict)  # reason -> first offending line number

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, where)

    def to_dict(self) -> dict:
        return {"read": self.read, "ingested": self.ingested, "duplicates": self.duplicates,
                "skipped": dict(self.skipped), "first_example": self.examples}  # fmt: skip


def ingest(work_dir: str | Path, profile: HardwareProfile, data_dir: str | Path,
           command: str | None = None) -> IngestReport:  # fmt: skip
    """Add the valid records of MetaSchedule ``work_dir`` to ``data_dir/<profile>``."""
    work_dir = Path(work_dir)
    workload_path, record_path = (work_dir / name for name in DB_FILES)
    if not record_path.exists() and not record_path.with_name(record_path.name + ".gz").exists():
        raise FileNotFoundError(f"{work_dir} has no {DB_FILES[1]}: not a MetaSchedule work_dir")
    report = IngestReport()
    workloads: dict[int, tuple[str, Workload] | None] = {}
    for index, line in enumerate(read_lines(workload_path)):
        try:
            raw = json.loads(line)
            workloads[index] = (str(raw[0]), Workload.from_json(raw))
        except Exception:  # noqa: BLE001 - TVM raises many error types on bad input
            workloads[index] = None
            report.skip("workload does not load", f"{workload_path.name}:{index + 1}")
    expected = device_key(profile.target)
    valid: list[tuple[str, str, TuningRecord, Workload]] = []
    for number, line in enumerate(read_lines(record_path), start=1):
        where = f"{record_path.name}:{number}"
        report.read += 1
        try:
            index, body = json.loads(line)
            entry = workloads.get(int(index))
        except (json.JSONDecodeError, TypeError, ValueError):
            report.skip("not a JSON record", where)
            continue
        if entry is None:
            report.skip("record refers to a missing or broken workload", where)
            continue
        shash, workload = entry
        try:
            record = TuningRecord.from_json(body, workload)
        except Exception:  # noqa: BLE001
            report.skip("record does not parse", where)
            continue
        measured = device_key(record.target)
        if measured != expected:
            raise ValueError(f"{where} was measured for target {json.dumps(measured)}, but profile {profile.name} "
                             f"is {json.dumps(expected)}; ingest it onto a profile with that target (nothing "
                             "was written)")  # fmt: skip
        try:
            record.trace.apply_to_schedule(Schedule(workload.mod), remove_postproc=False)
        except TVM_ERRORS:
            report.skip("trace does not replay on its workload", where)
            continue
        valid.append((shash, json.dumps(body[0]), record, workload))
    directory = Path(data_dir) / profile.name
    database = open_database(directory)
    known = _known_keys(directory)
    for shash, trace, record, workload in valid:
        key = (shash, trace)
        if key in known:
            report.duplicates += 1
            continue
        known.add(key)
        committed = database.commit_workload(workload.mod)
        database.commit_tuning_record(
            TuningRecord(record.trace, committed, record.run_secs, record.target, record.args_info)
        )
        report.ingested += 1
    pack(directory)
    _record_provenance(directory, profile, work_dir, report, command)
    return report


def _record_provenance(directory: Path, profile: HardwareProfile, source: Path, report: IngestReport,
                       command: str | None) -> None:  # fmt: skip
    run = {"command": command or " ".join(sys.argv), "ingested": report.to_dict(), "source": str(source),
           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "target": profile.target,
           "machine": {"key": profile.machine} if profile.machine else {}}  # fmt: skip
    exhausted: set[str] = set()
    if (source / "provenance.json").exists():
        run["source_provenance"] = json.loads((source / "provenance.json").read_text())
        # tasks the source's collection measured out stay skipped when this profile's grows
        exhausted = set(run["source_provenance"].get("exhausted", []))
    append_provenance_run(directory, profile, run, exhausted)


def _known_keys(directory: Path) -> set[tuple[str, str]]:
    """(workload structural hash, trace JSON) of every record already in a database directory."""
    shashes = [json.loads(line)[0] for line in read_lines(directory / DB_FILES[0])]
    keys = set()
    for line in read_lines(directory / DB_FILES[1]):
        index, body = json.loads(line)
        keys.add((str(shashes[index]), json.dumps(body[0])))
    return keys
