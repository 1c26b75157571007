"""What the committed data holds: records and tasks per profile, the held-out split."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from ..hardware import ProfileError, get_profile
from ..tvm_glue import DB_FILES
from .collect import read_lines
from .split import HELDOUT_HOST, HELDOUT_HOSTS, HELDOUT_TASKS, is_heldout


def data_stats(data_dir: str | Path, reference_dir: str | Path | None = None) -> dict:
    """``{"profiles": {name: {"records", "measured", "tasks", "machine", "heldout", "by_search"}}, "sources":
    {"profiles", "machines", "records"}, "heldout_profile", "heldout_profiles", "heldout_tasks", "reference": {...}}``.

    Counted from the database files without loading TVM objects (fast on large databases);
    ``measured`` are records with a latency, ``tasks`` the workloads that have records, ``machine``
    the physical machine that measured them, ``by_search`` how they were made (``_by_search``). ``sources`` sums the profiles that are not held out
    (the training data). The held-out profile's reference (``reference_dir``) is reported apart.
    """
    profiles = _count(Path(data_dir))
    sources = {name: row for name, row in profiles.items() if not row["heldout"]}
    out = {"profiles": profiles, "heldout_profile": HELDOUT_HOST, "heldout_profiles": list(HELDOUT_HOSTS),
           "heldout_tasks": list(HELDOUT_TASKS),
           "sources": {"profiles": len(sources), "records": sum(r["records"] for r in sources.values()),
                       "machines": sorted({r["machine"] for r in sources.values() if r["machine"]})}}  # fmt: skip
    if reference_dir is not None:
        out["reference"] = _count(Path(reference_dir))
    return out


def data_fingerprint(data_dir: str | Path, profiles: list[str]) -> dict:
    """Which data a model was trained on: a SHA-256 over the named profiles' database lines (the
    same for a copied snapshot and for the committed files it was copied from, gzip or not), and
    the git commit holding them when ``data_dir`` is a clean part of a git checkout (committed files
    unchanged, and any unpacked working copy holding the same lines as its committed ``.json.gz``)."""
    root, digest, unpacked_same = Path(data_dir), hashlib.sha256(), True
    for name in sorted(profiles):
        for file in DB_FILES:
            lines = read_lines(root / name / file)
            digest.update(f"{name}/{file}\n".encode())
            for line in lines:
                digest.update(line.encode() + b"\n")
            if (root / name / file).exists():
                unpacked_same &= lines == read_lines(root / name / file, packed_only=True)
    out = {"profiles": sorted(profiles), "sha256": digest.hexdigest(), "commit": None}
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "--", *sorted(profiles)], capture_output=True, text=True)
    if unpacked_same and head.returncode == 0 and dirty.returncode == 0 and not dirty.stdout.strip():
        out["commit"] = head.stdout.strip()
    return out


def _provenance(directory: Path) -> dict:
    path = directory / "provenance.json"
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        return {}


def _by_search(provenance: dict) -> dict[str, int]:
    """Records per way they were made, from the runs in provenance.json: "evolutionary" collection
    (runs before the strategy was recorded were all evolutionary), "tensorgpt" (self-training) or
    "ingested" (someone's tuning logs)."""
    out: dict[str, int] = {}
    for run in provenance.get("runs", []):
        if "ingested" in run:
            key, count = "ingested", int(run["ingested"].get("ingested", 0))
        else:
            key, count = run.get("strategy", "evolutionary"), int(run.get("records_after", 0)) - int(run.get("records_before", 0))
        out[key] = out.get(key, 0) + count
    return out


def _machine(directory: Path, provenance: dict) -> str:
    """The machine that measured a profile's records: its provenance, else the registry's profile."""
    recorded = provenance.get("machine", "")
    if recorded:
        return str(recorded)
    try:
        return get_profile(directory.name).machine
    except ProfileError:
        return ""


def _count(root: Path) -> dict:
    profiles = {}
    for directory in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        records = read_lines(directory / DB_FILES[1])
        if not records and not read_lines(directory / DB_FILES[0]):
            continue
        workloads, measured, corrupt = set(), 0, 0
        for line in records:
            try:
                index, body = json.loads(line)
                run_secs = body[1] if len(body) > 1 else None
            except (json.JSONDecodeError, ValueError, TypeError):
                corrupt += 1
                continue
            workloads.add(index)
            measured += bool(run_secs)
        provenance = _provenance(directory)
        profiles[directory.name] = {"records": len(records) - corrupt, "measured": measured, "tasks": len(workloads),
                                    "machine": _machine(directory, provenance), "heldout": is_heldout(directory.name),
                                    "by_search": _by_search(provenance)}  # fmt: skip
        if corrupt:
            profiles[directory.name]["corrupt_lines"] = corrupt
    return profiles
