"""``ModelGenerator``: the network behind the search strategy's ``Generator`` interface.

It learns the device from the tuning's target (``prepare``): the profile's bucket token goes into
the prompt and its standardized vector (with the checkpoint's standardization) into the KV prefix.
Torch runs on one thread: two threads against busy TVM builders were ~20x slower here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from tvm.target import Target

from ..hardware import HardwareProfile, profile_from_target
from ..hardware.vector import Standardizer
from ..language import DecisionFilter, Sketch
from ..plugin.generator import Generator, Proposal
from ..workloads.features import workload_features
from .generate import SamplingConfig, sample_decisions
from .network import TensorGPTNetwork


class ModelGenerator(Generator):
    def __init__(
        self,
        net: TensorGPTNetwork,
        standardizer: Standardizer,
        sampling: SamplingConfig = SamplingConfig(),
        filters: Sequence[DecisionFilter] = (),
        batch: int = 64,
    ) -> None:
        self.net = net.eval()
        self.standardizer = standardizer
        self.sampling = sampling
        self.filters = tuple(filters)
        self.batch = batch
        self.profile: HardwareProfile | None = None

    def prepare(self, target: Target) -> None:
        self.profile = profile_from_target(target)

    def generate(self, sketches: Sequence[Sketch], num: int, rng: np.random.Generator) -> list[Proposal]:
        if self.profile is None:
            raise RuntimeError("ModelGenerator.prepare(target) must run before generate")
        torch.set_num_threads(1)
        vector = torch.tensor(self.standardizer(self.profile), dtype=torch.float32)
        generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
        picks = [int(i) for i in rng.integers(len(sketches), size=num)]
        out: list[Proposal] = []
        config = self.net.config
        features = None
        if config.experts and config.workload_aware:
            features = torch.tensor(np.stack([workload_features(s.mod) for s in sketches]))
        for start in range(0, num, self.batch):
            chunk = picks[start : start + self.batch]
            hardware = vector.expand(len(chunk), -1) if config.hardware_grounding or config.experts else None
            workload = features[chunk] if features is not None else None
            decisions = sample_decisions(self.net, [sketches[i] for i in chunk], config.hardware_tokens(self.profile),
                                         hardware, generator, self.sampling, self.filters, workload)  # fmt: skip
            out += [Proposal(i, d) for i, d in zip(chunk, decisions)]
        return out
