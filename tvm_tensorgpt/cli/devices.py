"""``tensorgpt devices``: hardware profiles, their 24-D vectors and how alike they look."""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from ..hardware import DIMENSIONS, HardwareProfile, ProfileError, all_profiles, get_profile, raw_vector
from ..hardware.registry import load_device_file
from ..hardware.vector import Standardizer, cosine_similarity
from .usage import UsageError


def add_parser(sub: Any) -> None:
    devices = sub.add_parser("devices", help="hardware profiles and their 24-D vectors")
    devices.add_argument("--json", action="store_true", help="a JSON list: name, bucket, kind, target, raw, vector")
    devices.add_argument("--file", action="append", default=[], help="also load a device JSON/TOML file")
    devices_sub = devices.add_subparsers(dest="devices_command")
    show = devices_sub.add_parser("show", help="explain one device's vector dimension by dimension")
    show.add_argument("name")
    similarity = devices_sub.add_parser("similarity", help="cosine similarity of the model-facing vectors")
    similarity.add_argument("--plot", help="write the matrix as a PNG here")
    devices.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        extra: list[HardwareProfile] = []
        for path in args.file:
            extra.append(load_device_file(path, tuple(p.name for p in extra)))
        profiles = all_profiles() + extra
        standardize = Standardizer.fit(profiles)
        if args.devices_command == "show":
            names = {p.name: p for p in profiles}
            profile = names[args.name] if args.name in names else get_profile(args.name)
    except (ProfileError, OSError) as err:
        raise UsageError(str(err)) from None
    if args.devices_command == "show":
        print(f"{profile.name}: {profile.kind}, bucket {profile.bucket}, target {json.dumps(profile.target)}")
        raw, vector = raw_vector(profile), standardize(profile)
        print(f"{'#':>2} {'dimension':24s} {'unit':12s} {'transform':9s} {'raw':>9s} {'model-facing':>12s}  source")
        for i, (dim, r, v) in enumerate(zip(DIMENSIONS, raw, vector)):
            print(f"{i:2d} {dim.name:24s} {dim.unit:12s} {dim.transform:9s} {r:9.3f} {v:12.3f}  {dim.source}")
        for fields_, doc in profile.sources.items():
            print(f"source of {fields_}: {doc}")
        return 0
    if args.devices_command == "similarity":
        return _similarity(profiles, standardize, args.plot)
    if args.json:
        print(json.dumps([{"name": p.name, "bucket": p.bucket, "kind": p.kind, "target": p.target,
                           "raw": p.raw(), "vector": [round(float(x), 6) for x in standardize(p)]}
                          for p in profiles], indent=1))  # fmt: skip
        return 0
    print(f"{'name':18s} {'kind':4s} {'bucket':15s} target")
    for p in profiles:
        print(f"{p.name:18s} {p.kind:4s} {p.bucket:15s} {json.dumps(p.target)}")
    return 0


def _similarity(profiles: list[HardwareProfile], standardize: Standardizer, plot: str | None) -> int:
    vectors = np.stack([standardize(p) for p in profiles])
    matrix = cosine_similarity(vectors, vectors)
    names = [p.name for p in profiles]
    print(" " * 18 + " ".join(f"{n[:7]:>7s}" for n in names))
    for name, row in zip(names, matrix):
        print(f"{name:18s}" + " ".join(f"{v:7.2f}" for v in row))
    if plot:
        _plot(matrix, names, plot)
        print(f"wrote {plot}")
    return 0


def _plot(matrix: np.ndarray, names: list[str], path: str) -> None:
    import matplotlib  # start-up cost: only when a plot is asked for

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 7))
    image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, label="cosine similarity")
    ax.set_title("Model-facing (standardized) 24-D hardware vectors")
    fig.text(0.01, 0.01, "python -m tvm_tensorgpt devices similarity --plot ...; standardized over these "
             "profiles", fontsize=7)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
