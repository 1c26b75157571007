"""Cost-model distillation: the shipped cost model's favourites as training examples.

The generator learns from measured records, which are few (a few hundred tasks, tens of thousands
of records) and mostly far from each task's best. The shipped cost model (``costmodel``) ranks
candidates on any task and any profiled device without a measurement. So, for every (task, source
profile): draw a large pool from the uniform prior, realise and postprocess each candidate as the
search does, score the pool with the cost model on that device, and keep the top ``keep`` as
examples (weight 1, near-best by the cost model's judgement). It is TLM's self-training with the
cost model as the oracle: cheap (no build, no run), so it covers every task on every device.

``distil`` appends one JSON line per kept candidate to a file, a (task, profile) at a time, so a
stopped run resumes where it was; ``distilled_examples`` turns the file into ``Example`` s for the
trainer (the prompt's hardware section as the model being trained expects).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import tvm_ffi
from tvm.s_tir.meta_schedule.arg_info import ArgInfo
from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate
from tvm.target import Target

from ..costmodel import DEFAULT_COST_MODEL
from ..costmodel.features import candidate_features
from ..costmodel.model import Pretrained
from ..generators import PriorGenerator
from ..hardware import get_profile, universe_standardizer
from ..language import VOCAB, Sketch, prompt_tokens, response_tokens
from ..language.design import design_context
from ..model import Example, ModelConfig
from ..tvm_glue import resolved_postprocs
from ..workloads.features import workload_features
from ..workloads.tasks import Task, get_task

@dataclass(frozen=True)
class DistillConfig:
    """``pool`` prior draws per (task, profile), the cost model's best ``keep`` kept; ``threads``
    realise the pool in parallel (TVM releases the GIL)."""

    pool: int = 512
    keep: int = 4
    seed: int = 0
    threads: int = 2


def _top(task: Task, profile_name: str, cost_model: Pretrained, config: DistillConfig,
         rng: np.random.Generator) -> list[dict]:  # fmt: skip
    """The cost model's best ``config.keep`` distinct valid candidates of a prior pool."""
    profile = get_profile(profile_name)
    target = Target(profile.target)
    context, sketches = design_context(task.mod, target)
    postprocs = resolved_postprocs(context)
    prior = PriorGenerator()
    prior.prepare(target)
    proposals = prior.generate(sketches, config.pool, rng)
    seeds = [int(s) for s in rng.integers(1, 2**31 - 1, size=len(proposals))]

    def realise(job: int) -> object:
        proposal = proposals[job]
        return sketches[proposal.sketch_index].realise(proposal.decisions, postprocs, seed=seeds[job])

    with ThreadPoolExecutor(max(1, config.threads)) as threads:
        realised = list(threads.map(realise, range(len(proposals))))
    keys: set[int] = set()
    kept: list[tuple[int, object]] = []
    for proposal, done in zip(proposals, realised):
        if not done.valid:
            continue
        key = int(tvm_ffi.structural_hash(done.schedule.mod))
        if key not in keys:
            keys.add(key)
            kept.append((proposal.sketch_index, done.schedule))
    if not kept:
        return []
    candidates = [MeasureCandidate(s, ArgInfo.from_entry_func(s.mod, remove_preproc=True)) for _, s in kept]
    margin = cost_model.margin(candidate_features(context, candidates, cost_model.standardizer(profile)))
    rows = []
    for rank, index in enumerate(np.argsort(-margin, kind="stable")[: config.keep]):
        sketch_index, schedule = kept[int(index)]
        try:  # the decisions TVM took too (compute locations the prior left to it)
            decisions = sketches[sketch_index].read_decisions(schedule.trace)
        except ValueError:
            continue
        rows.append({"task": task.name, "profile": profile_name, "sketch": sketch_index, "rank": rank,
                     "margin": float(margin[index]), "pool": len(kept), "decisions": decisions})  # fmt: skip
    return rows


def distil(tasks: Sequence[Task], profiles: Sequence[str], out: str | Path, config: DistillConfig = DistillConfig(),
           cost_model: str | Path = DEFAULT_COST_MODEL) -> int:  # fmt: skip
    """Append the cost model's favourites of every (task, profile) not yet in ``out``; the number
    of (task, profile) pairs done now. The first line records the config and the cost model."""
    from tqdm import tqdm

    out = Path(out)
    model = Pretrained.load(cost_model)
    done: set[tuple[str, str]] = set()
    if out.exists():
        with out.open(encoding="utf-8") as lines:
            header = json.loads(next(lines))
            if header.get("config") != asdict(config):
                raise ValueError(f"{out} was distilled with {header.get('config')}, not {asdict(config)}: "
                                 "resume with the same settings, or write a new file")  # fmt: skip
            if header.get("trained") != model.meta.get("trained", {}):
                raise ValueError(f"{out} was distilled from another cost model than {cost_model}: resume with "
                                 "the same cost model, or write a new file")  # fmt: skip
            done = {(row["task"], row["profile"]) for row in map(json.loads, lines) if "task" in row}
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        header = {"config": asdict(config), "cost_model": str(cost_model), "trained": model.meta.get("trained", {})}
        out.write_text(json.dumps(header) + "\n", encoding="utf-8")
    jobs = [(t, p) for t in tasks for p in profiles if (t.name, p) not in done]
    count = 0
    with out.open("a", encoding="utf-8") as sink:
        for task, profile in tqdm(jobs, desc="distil", file=sys.stderr, mininterval=10):
            # one stream per pair: the same pair draws the same pool, resumed or not
            rng = np.random.default_rng([config.seed, int(tvm_ffi.structural_hash(task.mod)) % 2**32,
                                         sum(map(ord, profile))])  # fmt: skip
            rows = _top(task, profile, model, config, rng)
            # a pair with nothing to keep still gets a line, so a resume does not redo it
            for row in rows or [{"task": task.name, "profile": profile, "decisions": None}]:
                sink.write(json.dumps(row) + "\n")
            sink.flush()
            count += 1
    return count


def fingerprint(path: str | Path) -> dict:
    """Which distilled file a checkpoint learnt from (for training.json's ``data``)."""
    return {"file": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}


def distilled_examples(path: str | Path, model: ModelConfig, profiles: Sequence[str] | None = None,
                       limit: int | None = None) -> dict[str, list[Example]]:  # fmt: skip
    """Examples per profile from a ``distil`` file (or its gzip, as committed; weight 1 each), for
    ``model``'s prompt; only ``profiles`` (default all), the first ``limit`` of each (quick runs)."""
    standardizer = universe_standardizer()
    path = Path(path)
    text = gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz" else path.read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines()[1:]]
    rows = [r for r in rows if r.get("decisions") is not None and (profiles is None or r["profile"] in profiles)]
    if limit is not None:
        rows = [r for name in dict.fromkeys(r["profile"] for r in rows) for r in
                [r for r in rows if r["profile"] == name][:limit]]  # fmt: skip
    out: dict[str, list[Example]] = {}
    cache: dict[tuple[str, str], list[Sketch]] = {}
    for row in rows:
        profile = get_profile(row["profile"])
        task = get_task(row["task"])
        pair = (row["task"], row["profile"])
        if pair not in cache:
            cache[pair] = design_context(task.mod, Target(profile.target))[1]
        sketch = cache[pair][row["sketch"]]
        decisions = [tuple(d) if isinstance(d, list) else d for d in row["decisions"]]
        out.setdefault(row["profile"], []).append(Example(
            VOCAB.encode(prompt_tokens(sketch, model.hardware_tokens(profile))),
            VOCAB.encode(response_tokens(sketch, decisions)),
            tuple(float(x) for x in standardizer(profile)),
            1.0,
            tuple(float(x) for x in workload_features(task.mod)),
            int(tvm_ffi.structural_hash(task.mod)),
        ))  # fmt: skip
    return out
