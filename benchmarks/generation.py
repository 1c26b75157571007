"""Generator speed: candidates per second, training throughput, and generation's share of a tune.

    python benchmarks/generation.py [--out benchmarks/results/generation.json]

On one torch thread unless said otherwise:
1. pools of 64 and 512 candidates from the bundled checkpoint (4 layers, width 256, three LoRA
   experts and the router) on the ResNet 3x3 conv2d workload and a held-out ResNet-50 3x3 conv
   (goal: 512 legal candidates in <= 2 s), with the part of that time TVM spends finding each
   candidate's legal compute locations (a replay of the trace prefix per candidate, read with TVM's
   rule: ``Sketch.legal_locations``); the weights
   matter for speed, since rows that share their first tokens share the work; next to the prior
   generator at 64;
2. training tokens per second (forward + backward + AdamW, batch 16 of real prompts), 1 and 2
   threads, on the default model size randomly initialised;
3. realising a pool (replay + postprocessors, ``Sketch.realise``) of 256 prior candidates of the
   held-out ResNet-50 conv on 1 and 2 threads, as the search strategy does between rounds;
4. a 32-trial tune of the conv2d workload with that network: the share of wall time spent
   generating (goal: <= 10 %).
Run it on a quiet machine; results are wall-clock.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import tvm
from common import RESULTS, provenance
from tvm.s_tir import meta_schedule as ms

import tvm_tensorgpt
from tvm_tensorgpt.data.split import HELDOUT_HOST, HELDOUT_TASKS
from tvm_tensorgpt.generators import PriorGenerator
from tvm_tensorgpt.generators.model import ModelGenerator
from tvm_tensorgpt.hardware import get_profile, universe_standardizer
from tvm_tensorgpt.language import VOCAB, Sketch, design_sketches, prompt_tokens, response_tokens
from tvm_tensorgpt.language.design import design_context
from tvm_tensorgpt.model import Example, ModelConfig, TensorGPTNetwork, checkpoint, collate
from tvm_tensorgpt.tvm_glue import load_tensor_intrinsics, resolved_postprocs
from tvm_tensorgpt.workloads import get_workload
from tvm_tensorgpt.workloads.features import workload_features
from tvm_tensorgpt.workloads.tasks import get_task

EXPERTS = ("intel-xeon-avx2-1c", "intel-xeon-sse42-1c", "intel-xeon-sse42-2c")
POOLS = (64, 512)


@contextlib.contextmanager
def time_in(owner: type, name: str) -> Iterator[list[float]]:
    """Sum the seconds spent in method ``owner.name`` while the block runs (wrapped, then restored)."""
    original = getattr(owner, name)
    spent = [0.0]

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    setattr(owner, name, timed)
    try:
        yield spent
    finally:
        setattr(owner, name, original)


def sampling_speed(sketches: list[Sketch], target: tvm.target.Target) -> dict:
    """Seconds and candidates/s of each pool size from the bundled checkpoint, and the seconds of
    those spent finding legal compute locations."""
    generator = ModelGenerator.from_checkpoint(checkpoint.DEFAULT_CHECKPOINT, batch=max(POOLS))
    generator.prepare(target)
    rng = np.random.default_rng(0)
    generator.generate(sketches, 4, rng)  # warm-up
    out = {}
    for pool in POOLS:
        with time_in(Sketch, "legal_locations") as locations:
            start = time.perf_counter()
            generator.generate(sketches, pool, rng)
            seconds = time.perf_counter() - start
        out[str(pool)] = {"seconds": round(seconds, 3), "candidates_per_s": round(pool / seconds, 1),
                          "location_probing_s": round(locations[0], 3)}  # fmt: skip
    return out


def realise_speed(mod: tvm.IRModule, target: tvm.target.Target, pool: int = 256) -> dict:
    """Seconds to realise ``pool`` prior candidates on 1 and 2 threads (TVM releases the GIL)."""
    context, sketches = design_context(mod, target)
    postprocs = resolved_postprocs(context)
    proposals = PriorGenerator().generate(sketches, pool, np.random.default_rng(0))

    def realise(proposal):
        return sketches[proposal.sketch_index].realise(proposal.decisions, postprocs)

    out = {}
    for threads in (1, 2):
        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool_threads:
            valid = sum(r.valid for r in pool_threads.map(realise, proposals))
        out[f"{threads}_threads_s"] = round(time.perf_counter() - start, 3)
    out["candidates"], out["valid"] = len(proposals), valid
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS / "generation.json"))
    args = parser.parse_args()
    profile = get_profile(HELDOUT_HOST)
    target = tvm.target.Target(profile.target)
    load_tensor_intrinsics(target)
    mod = get_workload("conv2d-resnet").build()
    sketches = design_sketches(mod, target)
    torch.manual_seed(0)
    net = TensorGPTNetwork(ModelConfig(experts=EXPERTS))
    results: dict = {"parameters": sum(p.numel() for p in net.parameters())}

    torch.set_num_threads(1)
    heldout = HELDOUT_TASKS[0]
    results["sampling"] = {name: sampling_speed(design_sketches(workload, target), target)
                           for name, workload in (("conv2d-resnet", mod), (heldout, get_task(heldout).mod))}  # fmt: skip
    for name, pools in results["sampling"].items():
        for pool, speed in pools.items():
            print(f"{name}, {pool} candidates: {speed['seconds']} s ({speed['candidates_per_s']} /s), "
                  f"{speed['location_probing_s']} s of it finding legal compute locations")  # fmt: skip
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    proposals = PriorGenerator().generate(sketches, 64, rng)
    results["prior_64_candidates_s"] = round(time.perf_counter() - start, 3)
    print(f"64 candidates from the prior: {results['prior_64_candidates_s']} s")

    results["realise_256"] = realise_speed(get_task(heldout).mod, target)
    print(f"realising 256 candidates: {results['realise_256']}")

    features = tuple(float(x) for x in workload_features(mod))
    vector = tuple(float(x) for x in universe_standardizer()(profile))
    examples = [Example(VOCAB.encode(prompt_tokens(sketches[p.sketch_index], [profile.bucket])),
                        VOCAB.encode(response_tokens(sketches[p.sketch_index], p.decisions)), vector, 1.0, features)
                for p in proposals[:16]]  # fmt: skip
    batch = collate(examples)
    tokens = int(batch["attention_mask"].sum())
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 10:
            optimizer.zero_grad()
            net.loss(batch).backward()
            optimizer.step()
            steps += 1
        results[f"train_tokens_per_s_{threads}_threads"] = round(steps * tokens / (time.perf_counter() - start))
        print(f"training, {threads} thread(s): {results[f'train_tokens_per_s_{threads}_threads']} tokens/s")

    stats = tvm_tensorgpt.TuningStats()
    strategy = tvm_tensorgpt.TensorGPTSearchStrategy(ModelGenerator(net, universe_standardizer()), stats=stats)
    start = time.perf_counter()
    ms.tune_tir(mod, target, tempfile.mkdtemp(), max_trials_global=32, num_trials_per_iter=16, strategy=strategy,
                space="tensorgpt", builder="tensorgpt", num_tuning_cores=2)  # fmt: skip
    wall = time.perf_counter() - start
    total = stats.total()
    results["tune_32_trials_wall_s"] = round(wall, 2)
    results["tune_generation_s"] = round(total.generation_s, 2)
    results["tune_generation_share"] = round(total.generation_s / wall, 3)
    results["tune_valid_share"] = round(total.valid / max(1, total.generated), 3)
    print(f"32-trial tune: {wall:.1f} s wall, {total.generation_s:.1f} s generating "
          f"({100 * total.generation_s / wall:.0f} %), {total.valid}/{total.generated} valid")  # fmt: skip

    record = provenance(" ".join(["python benchmarks/generation.py", *sys.argv[1:]])) | {
        "profile": profile.name,
        "workload": "conv2d-resnet",
        "results": results,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
