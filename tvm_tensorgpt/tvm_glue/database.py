"""MetaSchedule JSON databases as this package keeps them: repaired after a kill, and records
matched to the device they were measured on.

A ``kill -9`` can cut the last line MetaSchedule was appending; its loader then fails on the whole
file ("Unexpected end of string"), so every reader (collection, tuning resumes) repairs first. A
record's latency only means something on its own device: ``same_device`` compares the target
attributes that name one (kind, mcpu, num-cores, GPU arch).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from tvm.target import Target

logger = logging.getLogger(__name__)

# MetaSchedule's JSONDatabase files in a work_dir
DB_FILES = ("database_workload.json", "database_tuning_record.json")
# The target attributes that make two devices different.
DEVICE_KEYS = ("kind", "mcpu", "num-cores", "arch")


def repair_database(directory: str | Path) -> int:
    """Drop trailing lines that are not valid JSON (a write cut by kill -9). Returns lines dropped."""
    dropped = 0
    for name in DB_FILES:
        path = Path(directory) / name
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        keep = len(lines)
        while keep and not _valid_json(lines[keep - 1]):
            keep -= 1
        if keep != len(lines):
            dropped += len(lines) - keep
            path.write_text("".join(lines[:keep]), encoding="utf-8")
            logger.warning("%s: dropped %d cut-off line(s) left by an interrupted write", path, len(lines) - keep)
    return dropped


def _valid_json(line: str) -> bool:
    if not line.strip():
        return False
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return line.endswith("\n")


def device_key(target: Target | dict[str, Any] | None) -> dict[str, Any]:
    """The attributes of ``target`` that name its device (``DEVICE_KEYS``); {} for None."""
    if target is None:
        return {}
    data = json.loads(str(target)) if isinstance(target, Target) else target
    return {k: data.get(k) for k in DEVICE_KEYS if data.get(k) is not None}


def same_device(a: Target | dict[str, Any] | None, b: Target | dict[str, Any] | None) -> bool:
    """Whether records measured for ``a`` describe the device ``b`` (kind, mcpu, cores, arch)."""
    return device_key(a) == device_key(b)
