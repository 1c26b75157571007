"""What the committed data holds: records and tasks per profile, the held-out split."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from .collect import DB_FILES
from .split import HELDOUT_HOST, HELDOUT_TASKS


def _read_lines(directory: Path, name: str) -> list[str]:
    plain, packed = directory / name, directory / f"{name}.gz"
    if plain.exists():
        text = plain.read_text(encoding="utf-8")
    elif packed.exists():
        text = gzip.decompress(packed.read_bytes()).decode("utf-8")
    else:
        return []
    return [line for line in text.splitlines() if line.strip()]


def data_stats(data_dir: str | Path, reference_dir: str | Path | None = None) -> dict:
    """``{"profiles": {name: {"records", "measured", "tasks"}}, "heldout_profile", "heldout_tasks",
    "reference": {...}}``.

    Counted from the database files without loading TVM objects (fast on large databases);
    ``measured`` are records with a latency, ``tasks`` the workloads that have records. The
    held-out profile's reference (``reference_dir``) is reported apart from the training data.
    """
    out = {"profiles": _count(Path(data_dir)), "heldout_profile": HELDOUT_HOST, "heldout_tasks": list(HELDOUT_TASKS)}
    if reference_dir is not None:
        out["reference"] = _count(Path(reference_dir))
    return out


def _count(root: Path) -> dict:
    profiles = {}
    for directory in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        records = _read_lines(directory, DB_FILES[1])
        if not records and not _read_lines(directory, DB_FILES[0]):
            continue
        workloads, measured = set(), 0
        for line in records:
            try:
                index, body = json.loads(line)
            except (json.JSONDecodeError, ValueError):
                continue
            workloads.add(index)
            run_secs = body[1] if len(body) > 1 else None
            measured += bool(run_secs)
        profiles[directory.name] = {"records": len(records), "measured": measured, "tasks": len(workloads)}
    return profiles
