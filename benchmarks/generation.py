"""Generator speed: candidates per second, training throughput, and generation's share of a tune.

    python benchmarks/generation.py [--out benchmarks/results/generation.json]

Uses the default model size (4 layers, width 256) with three LoRA experts and the router, randomly
initialised (speed does not depend on the weights), on one torch thread unless said otherwise:
1. a 64-candidate round on the ResNet 3x3 conv2d workload (goal: 64 legal candidates in <= 3 s),
   next to the prior generator;
2. training tokens per second (forward + backward + AdamW, batch 16 of real prompts), 1 and 2 threads;
3. a 32-trial tune of that workload with this generator: the share of wall time spent generating
   (goal: <= 10 %).
Run it on a quiet machine; results are wall-clock.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import torch
import tvm
from startup import _cpu_name
from tvm.s_tir import meta_schedule as ms

import tvm_tensorgpt
from tvm_tensorgpt.hardware import get_profile, universe_standardizer
from tvm_tensorgpt.language import VOCAB, prompt_tokens, response_tokens
from tvm_tensorgpt.model import ModelConfig, TensorGPTNetwork
from tvm_tensorgpt.model.generator import ModelGenerator
from tvm_tensorgpt.plugin import PriorGenerator
from tvm_tensorgpt.plugin.intrinsics import load_tensor_intrinsics
from tvm_tensorgpt.train.dataset import design_sketches
from tvm_tensorgpt.train.sft import Example, collate, loss_on
from tvm_tensorgpt.workloads import get_workload
from tvm_tensorgpt.workloads.features import workload_features

EXPERTS = ("host-avx2-1c", "host-sse42-1c", "host-sse42-2c")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "generation.json"))
    args = parser.parse_args()
    profile = get_profile("host-avx2-2c")
    target = tvm.target.Target(profile.target)
    load_tensor_intrinsics(target)
    mod = get_workload("conv2d-resnet").build()
    sketches = design_sketches(mod, target)
    torch.manual_seed(0)
    net = TensorGPTNetwork(ModelConfig(experts=EXPERTS))
    results: dict = {"parameters": sum(p.numel() for p in net.parameters())}

    generator = ModelGenerator(net, universe_standardizer())
    generator.prepare(target)
    rng = np.random.default_rng(0)
    generator.generate(sketches, 4, rng)  # warm-up
    start = time.perf_counter()
    proposals = generator.generate(sketches, 64, rng)
    results["model_64_candidates_s"] = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    PriorGenerator().generate(sketches, 64, rng)
    results["prior_64_candidates_s"] = round(time.perf_counter() - start, 3)
    print(f"64 candidates: model {results['model_64_candidates_s']} s, prior {results['prior_64_candidates_s']} s")

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
            loss_on(net, batch).backward()
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

    record = {
        "command": "python benchmarks/generation.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count()},
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
