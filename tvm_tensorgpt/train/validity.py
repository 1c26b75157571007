"""GPU training signal without timings: validity labels.

Nothing measures CUDA here, but TVM verifies (and nvcc compiles) CUDA without a GPU. For a source
GPU profile, uniform legal decision sets *without* device masks for the training tasks' CUDA
design spaces are labelled by MetaSchedule's CUDA postprocessors, VerifyGPUCode with the device's
limits included. The verified ones become examples of weight 1 (there is no latency to rank them):
a GPU expert learns where the device's valid region lies, not what is fast there. Labels are kept
per profile in ``data/validity/PROFILE.jsonl.gz`` (one line per candidate, appended per task, so a
killed labelling resumes); Jetson Orin, the held-out GPU, is never labelled.
"""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tvm.target import Target

from ..data.split import check_not_heldout
from ..generators import PriorGenerator
from ..hardware import HardwareProfile, get_profile, universe_standardizer
from ..hardware.vector import Standardizer
from ..language import VOCAB, design_context, design_sketches, prompt_tokens, response_tokens
from ..model import Example, ModelConfig
from ..tvm_glue import resolved_postprocs
from ..workloads.features import workload_features
from ..workloads.tasks import Task, get_task

logger = logging.getLogger(__name__)

def _labelled(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def label_tasks(profile: HardwareProfile, tasks: Sequence[Task], per_task: int, out_dir: str | Path,
                seed: int = 0) -> dict[str, int]:  # fmt: skip
    """Label ``per_task`` unmasked candidates of every task not labelled yet; returns the totals."""
    from tqdm import tqdm

    if profile.kind != "gpu":
        raise ValueError(f"{profile.name} is not a GPU profile: CPU profiles have measured records")
    check_not_heldout(profile.name)
    path = Path(out_dir) / f"{profile.name}.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {row["task"] for row in _labelled(path)}
    target = Target(profile.target)
    prior = PriorGenerator(device_limits=False)
    for task in tqdm([t for t in tasks if t.name not in done], desc=f"label {profile.name}", unit="task"):
        rng = np.random.default_rng([seed, zlib.crc32(task.name.encode())])
        context, sketches = design_context(task.mod, target, seed)
        postprocs = resolved_postprocs(context)
        rows = []
        for proposal in prior.generate(sketches, per_task, rng):
            sketch = sketches[proposal.sketch_index]
            realised = sketch.realise(proposal.decisions, postprocs)
            # TVM may repair a decision while applying it: label what was applied
            applied = realised.schedule
            decisions = sketch.read_decisions(applied.trace) if applied is not None else proposal.decisions
            rows.append({"task": task.name, "sketch": proposal.sketch_index, "verified": realised.valid,
                         "decisions": [list(d) if isinstance(d, tuple) else d for d in decisions]})  # fmt: skip
        with gzip.open(path, "at", encoding="utf-8") as f:  # one gzip member per task: appendable
            f.writelines(json.dumps(row) + "\n" for row in rows)
        done.add(task.name)
    rows = _labelled(path)
    return {"candidates": len(rows), "verified": sum(r["verified"] for r in rows), "tasks": len(done)}


def validity_examples(path: str | Path, model: ModelConfig, standardizer: Standardizer) -> list[Example]:
    """The verified candidates of one profile's label file as weight-1 examples."""
    path = Path(path)
    profile = get_profile(path.name.removesuffix(".jsonl.gz"))
    check_not_heldout(profile.name)
    target = Target(profile.target)
    vector = tuple(float(x) for x in standardizer(profile))
    tokens = model.hardware_tokens(profile)
    by_task: dict[str, list[dict]] = {}
    for row in _labelled(path):
        if row["verified"]:
            by_task.setdefault(row["task"], []).append(row)
    examples = []
    for name, rows in by_task.items():
        task = get_task(name)
        sketches = design_sketches(task.mod, target)
        workload = tuple(float(x) for x in workload_features(task.mod))
        seen: set[tuple[int, ...]] = set()
        for row in rows:
            sketch = sketches[row["sketch"]]
            decisions = [tuple(d) if isinstance(d, list) else d for d in row["decisions"]]
            response = VOCAB.encode(response_tokens(sketch, decisions))
            if tuple(response) in seen:
                continue
            seen.add(tuple(response))
            examples.append(Example(VOCAB.encode(prompt_tokens(sketch, tokens)), response, vector, 1.0, workload))
    logger.info("%s: %d verified examples from %d tasks", profile.name, len(examples), len(by_task))
    return examples


def load_validity_examples(directory: str | Path, model: ModelConfig) -> dict[str, list[Example]]:
    """GPU profile -> the verified examples of every label file in ``directory``."""
    files = sorted(Path(directory).glob("*.jsonl.gz"))
    if not files:
        raise ValueError(f"no validity labels (*.jsonl.gz) in {directory}; make them with `tensorgpt data validity`")
    standardizer = universe_standardizer()
    return {f.name.removesuffix(".jsonl.gz"): validity_examples(f, model, standardizer) for f in files}
