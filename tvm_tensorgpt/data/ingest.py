"""Bring your own logs: any MetaSchedule work_dir becomes training data for a profile.

The files are read line by line (MetaSchedule's own loader stops at the first bad line); every
line is checked and either ingested or reported with its reason: not JSON, a workload that does not
load, a record pointing at a missing workload, a trace that does not parse or does not replay on
its workload, a record measured for another kind of target than the profile's (foreign). Records
already in the profile's database are not added again.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule.database import TuningRecord, Workload

from ..hardware import HardwareProfile
from ..tvm_glue import TVM_ERRORS
from .collect import DB_FILES, open_database, pack


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


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []


def ingest(work_dir: str | Path, profile: HardwareProfile, data_dir: str | Path) -> IngestReport:
    work_dir = Path(work_dir)
    workload_path, record_path = (work_dir / name for name in DB_FILES)
    if not record_path.exists():
        raise FileNotFoundError(f"{work_dir} has no {DB_FILES[1]}: not a MetaSchedule work_dir")
    report = IngestReport()
    workloads: dict[int, tuple[str, Workload] | None] = {}
    for index, line in enumerate(_lines(workload_path)):
        try:
            raw = json.loads(line)
            workloads[index] = (str(raw[0]), Workload.from_json(raw))
        except Exception:  # noqa: BLE001 - TVM raises many error types on bad input
            workloads[index] = None
            report.skip("workload does not load", f"{workload_path.name}:{index + 1}")
    directory = Path(data_dir) / profile.name
    database = open_database(directory)
    known = _known_keys(directory)
    target_kind = str(profile.target["kind"])
    for number, line in enumerate(_lines(record_path), start=1):
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
        if record.target is None or record.target.kind.name != target_kind:
            report.skip(f"foreign: measured for another target kind than {target_kind}", where)
            continue
        try:
            record.trace.apply_to_schedule(Schedule(workload.mod), remove_postproc=False)
        except TVM_ERRORS:
            report.skip("trace does not replay on its workload", where)
            continue
        key = (shash, json.dumps(body[0]))
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
    return report


def _known_keys(directory: Path) -> set[tuple[str, str]]:
    """(workload structural hash, trace JSON) of every record already in a database directory."""
    shashes = [json.loads(line)[0] for line in _lines(directory / DB_FILES[0])]
    keys = set()
    for line in _lines(directory / DB_FILES[1]):
        index, body = json.loads(line)
        keys.add((str(shashes[index]), json.dumps(body[0])))
    return keys
