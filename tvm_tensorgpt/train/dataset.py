"""From measured records to training examples (prompt, response, hardware, weight).

A record's trace is one of its task's design spaces with sampled decisions. For every (task,
profile) the design spaces are generated once for the profile's target and analysed as sketches;
a record belongs to the sketch whose simplified instructions (kinds, annotation keys, variables
read; MetaSchedule stores traces with dead instructions removed) equal the trace's before
postprocessing. Its decisions become the response. Weighting sharpens TLM's best-per-prompt SFT
towards near-best schedules: the fastest record of the *task* (over all its sketches) has weight 1,
a record k times slower 1/k^``sharpness`` (4 by default: 1.2x slower 0.48, 2x slower 0.06). With
1/k per sketch (the first recipe) only a quarter of the loss fell on records within 1.2x of their
task's best, and a slow sketch's best counted as much as the task's.
Records that failed to run, match no sketch or repeat a (prompt, response) pair are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import tvm_ffi
from tvm.ir import IRModule
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from ..hardware import HardwareProfile
from ..hardware.vector import Standardizer
from ..language import VOCAB, Sketch, design_sketches, prompt_tokens, response_tokens
from ..language.sketch import instruction_structure
from ..model import Example
from ..workloads.features import workload_features

logger = logging.getLogger(__name__)


@dataclass
class RecordStats:
    records: int = 0
    failed: int = 0
    unmatched: int = 0
    duplicates: int = 0
    light: int = 0  # below min_weight
    examples: int = 0


def examples_from_database(
    database: ms.database.Database,
    profile: HardwareProfile,
    standardizer: Standardizer | None,
    hardware_tokens: Sequence[str] | None = None,
    exclude: Iterable[IRModule] = (),
    limit: int | None = None,
    sharpness: float = 4.0,
    min_weight: float = 0.0,
) -> tuple[list[Example], RecordStats]:
    """Examples from every record of ``database`` (one profile's measurements).

    ``hardware_tokens`` default to the profile's bucket; ``standardizer`` None leaves the hardware
    vector out (no KV prefix); ``exclude`` are workloads never to train on (held-out tasks);
    ``limit`` reads only the first records (quick runs); records weighing less than ``min_weight``
    are left out (far from their task's best, they add little to the weighted loss but all the cost).
    """
    target = Target(profile.target)
    vector = tuple(float(x) for x in standardizer(profile)) if standardizer is not None else None
    tokens = list(hardware_tokens) if hardware_tokens is not None else [profile.bucket]
    excluded = list(exclude)
    stats = RecordStats()
    grouped: dict[tuple[int, ...], list[tuple[list[int], float, tuple[float, ...], int]]] = {}
    task_best: dict[int, float] = {}  # structural hash of the task -> its fastest latency
    sketch_cache: dict[int, list[tuple[list, Sketch]]] = {}
    features: dict[int, tuple[float, ...]] = {}
    for record in list(database.get_all_tuning_records())[:limit]:
        stats.records += 1
        mod = record.workload.mod
        if any(tvm_ffi.structural_equal(mod, other) for other in excluded):
            continue
        if record.run_secs is None or len(record.run_secs) == 0:
            stats.failed += 1
            continue
        key = int(tvm_ffi.structural_hash(mod))
        if key not in features:
            features[key] = tuple(float(x) for x in workload_features(mod))
        if key not in sketch_cache:
            # MetaSchedule stores simplified traces (dead instructions dropped): compare those
            sketch_cache[key] = [(instruction_structure(s.trace.simplified(True)), s) for s in design_sketches(mod, target)]
        structure = instruction_structure(record.trace.simplified(True))
        sketch = next((s for shape, s in sketch_cache[key] if shape == structure), None)
        if sketch is None:
            stats.unmatched += 1
            continue
        try:
            decisions = sketch.read_decisions(record.trace)
        except ValueError:
            stats.unmatched += 1
            continue
        prompt = tuple(VOCAB.encode(prompt_tokens(sketch, tokens)))
        response = VOCAB.encode(response_tokens(sketch, decisions))
        latency = float(np.mean([float(s) for s in record.run_secs]))
        grouped.setdefault(prompt, []).append((response, latency, features[key], key))
        task_best[key] = min(task_best.get(key, latency), latency)
    examples = []
    for prompt, rows in grouped.items():
        seen: set[tuple[int, ...]] = set()
        for response, latency, workload, key in sorted(rows, key=lambda r: r[1]):
            if tuple(response) in seen:
                stats.duplicates += 1
                continue
            seen.add(tuple(response))
            weight = (task_best[key] / latency) ** sharpness
            if weight < min_weight:
                stats.light += 1
                continue
            examples.append(Example(list(prompt), response, vector, weight, workload, key))
    stats.examples = len(examples)
    return examples, stats
