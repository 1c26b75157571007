"""``ModelGenerator``: the network behind the search strategy's ``Generator`` interface.

It learns the device from the tuning's target (``prepare``): the profile's bucket token goes into
the prompt and its standardized vector (with the checkpoint's standardization) into the KV prefix.
Torch runs on one thread: two threads against busy TVM builders were ~20x slower here. Candidates
are sampled ``batch`` at a time (default 512: the rows of one sketch share its prompt and their
first tokens' work, so a larger batch costs less per candidate). A sketch is decoded up to
``ahead`` rows at a time, at most ``ahead_factor`` times the rows asked, and the rows not asked for
serve the next calls on it: a search's later rounds ask for a few candidates per sketch, where a
decoding step costs about what a batch of 64 costs (not while adapting or choosing experts, which
change the distribution between rounds). The factor bounds the waste of rows never asked for on
tasks with many sketches (a softmax has 9: 64 rows each decoded 576 for the 175 a tune asked), where
a row's legal compute locations can cost a replay each.

``observe`` feeds online adaptation (``AdaptConfig``): before each round, a few weighted SFT steps
on the fastest schedules measured so far on this device, so the model leans towards what worked
on the target it never saw in training. It also feeds expert choice (``ExpertChoice``): before each
round, the expert mix under which the task's fastest measurements are most likely samples it.

``default_generator()`` is what ``strategy="tensorgpt"`` uses: the checkpoint bundled in the
package (``tvm_tensorgpt/model/default/``), or the prior when the package has none. This module
imports torch; ``generators.resolve`` reaches it only when a model is asked for.
"""

from __future__ import annotations

import copy
import functools
import logging
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import tvm_ffi
from tvm.target import Target

from ..hardware import HardwareProfile, get_profile, profile_from_target
from ..hardware.vector import Standardizer, cosine_similarity
from ..language import (
    VOCAB,
    Decision,
    Filter,
    Sketch,
    device_filters,
    prompt_tokens,
    response_tokens,
)
from ..model import (
    Example,
    SamplingConfig,
    TensorGPTNetwork,
    collate,
    legal_token_probabilities,
    sample_decisions,
)
from ..model import checkpoint
from ..workloads.features import workload_features
from .base import Generator, Proposal
from .prior import PriorGenerator

logger = logging.getLogger(__name__)

# Below this cosine similarity (standardized vectors) to every expert's device, a device has no
# close expert and the base model proposes alone. Host CPUs score >= 0.55 against the host-profile
# experts; published GPUs and the Ryzen laptop score <= 0.2 (`tensorgpt devices similarity`).
CLOSE_EXPERT = 0.5


@dataclass(frozen=True)
class AdaptConfig:
    """Online adaptation from measurements: ``steps`` gradient steps per round (0 = off) on the
    ``top`` fastest measured schedules, weighted best/latency like the training data. With
    experts only the experts and router move (the base stays the fallback), else every weight."""

    steps: int = 0
    top: int = 8
    lr: float = 1e-4


@dataclass(frozen=True)
class ExpertChoice:
    """Expert choice from measurements (0 = off): before each round, the ``top`` fastest measured
    schedules of the task are scored (per legal token, weighted best/latency) under the router's
    gates, the base alone and each expert alone; the mix under which they are most likely samples
    the round. Why: the router sees only hardware and workload features, and on a device it never
    trained on, which source device's expert knows the task is what the first measurements tell.
    Unlike adaptation no weight moves: one batched forward pass per scored schedule."""

    top: int = 0


class ModelGenerator(Generator):
    def __init__(
        self,
        net: TensorGPTNetwork,
        standardizer: Standardizer,
        sampling: SamplingConfig = SamplingConfig(),
        filters: Sequence[Filter] = (),
        batch: int = 512,
        ahead: int = 64,
        ahead_factor: float = 2.0,
        adapt: AdaptConfig = AdaptConfig(),
        device_limits: bool = True,
        choice: ExpertChoice = ExpertChoice(),
    ) -> None:
        # adaptation changes weights: keep the caller's network (e.g. the shared default) intact
        self.net = (copy.deepcopy(net) if adapt.steps else net).eval()
        self.standardizer = standardizer
        self.sampling = sampling
        self.filters = tuple(filters)
        self.batch = batch
        self.ahead = ahead
        self.ahead_factor = ahead_factor
        # rows decoded ahead, per sketch (by id, with a weak reference that tells a reused id) and
        # the conditions they were decoded under (``_kept``)
        self._ahead: dict[int, tuple[weakref.ref, tuple, list[list[Decision]]]] = {}
        self.adapt = adapt
        self.choice = choice
        self.device_limits = device_limits  # False: unconstrained decoding (TLM-style)
        self.profile: HardwareProfile | None = None
        self.measured: list[tuple[int, Sketch, list[Decision], float]] = []  # (task hash, ...)
        self._fresh = False
        self._unchosen: set[int] = set()  # tasks with measurements the expert choice has not seen
        self.chosen_gates: dict[int, torch.Tensor | None] = {}  # task hash -> chosen gates (None: the router's)
        self.choices: list[str] = []  # every choice made ("router", "base", an expert), in order
        self._optimizer: torch.optim.Optimizer | None = None
        self.source = "network"
        self.base_only = False
        self.device: tuple[Filter, ...] = ()  # the device's limits as masks (prepare)

    def describe(self) -> str:
        mix = f" ({self.sampling.prior_mix:.0%} prior per token)" if self.sampling.prior_mix else ""
        adapting = f" (adapting: {self.adapt.steps} steps/round)" if self.adapt.steps else ""
        made = ", ".join(f"{name} x{n}" for name, n in sorted(Counter(self.choices).items()))
        choosing = ""
        if self.choice.top:
            choosing = f" (choosing experts by the top {self.choice.top} measurements: {made or 'none made'})"
        return f"{self.source}{mix}{adapting}{choosing}"

    @property
    def mixes_prior(self) -> bool:
        return self.sampling.prior_mix > 0

    @classmethod
    def from_checkpoint(cls, path: str | Path, **kwargs) -> ModelGenerator:
        net, standardizer = _load(str(Path(path).resolve()))
        generator = cls(net, standardizer, **kwargs)
        generator.source = f"checkpoint {path}"
        return generator

    def prepare(self, target: Target) -> None:
        self.profile = profile_from_target(target)
        self.device = tuple(device_filters(self.profile)) if self.device_limits else ()
        self.base_only = False
        experts = self.net.config.experts
        self.chosen_gates, self._unchosen = {}, set()
        if experts and self.net.router is not None:
            closest = self.closest_expert(self.profile)
            if closest is not None and closest[1] < CLOSE_EXPERT:
                self.base_only = True
                logger.warning("TensorGPT: no expert is close to %s (closest %s, cosine %.2f < %.2f); "
                               "proposing with the base model alone", self.profile.name, *closest,
                               CLOSE_EXPERT)  # fmt: skip

    def closest_expert(self, profile: HardwareProfile) -> tuple[str, float] | None:
        """(expert, cosine similarity) of the expert device nearest ``profile``; None when the
        experts are not known profiles (a user's own devices)."""
        names = self.net.config.experts
        try:
            others = np.stack([self.standardizer(get_profile(name)) for name in names])
        except ValueError:
            return None
        cosines = cosine_similarity(self.standardizer(profile)[None], others)[0]
        best = int(np.argmax(cosines))
        return names[best], float(cosines[best])

    def _vector(self) -> torch.Tensor:
        if self.profile is None:
            raise RuntimeError("ModelGenerator.prepare(target) must run before generate")
        return torch.tensor(self.standardizer(self.profile), dtype=torch.float32)

    def generate(self, sketches: Sequence[Sketch], num: int, rng: np.random.Generator) -> list[Proposal]:
        vector = self._vector()
        torch.set_num_threads(1)
        if self._fresh and self.adapt.steps:
            self._adapt(vector)
        generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
        counts = np.bincount(rng.integers(len(sketches), size=num), minlength=len(sketches))
        ahead = self.ahead if not (self.adapt.steps or self.choice.top) else 0
        out: list[Proposal] = []
        picks: list[int] = []  # a sketch index per row to decode
        wanted: dict[int, int] = {}  # rows each sketch still needs once its kept ones are used
        kept = self._kept(sketches)
        for index, count in enumerate(counts):
            take = min(int(count), len(kept[index]))
            out += [Proposal(index, kept[index].pop()) for _ in range(take)]
            wanted[index] = int(count) - take
            if wanted[index]:
                picks += [index] * max(wanted[index], int(min(ahead, self.ahead_factor * wanted[index])))
        for index, decisions in self._decode(sketches, picks, vector, generator) if picks else []:
            if wanted[index]:
                wanted[index] -= 1
                out.append(Proposal(index, decisions))
            else:
                kept[index].append(decisions)
        return out

    def _kept(self, sketches: Sequence[Sketch]) -> list[list[list[Decision]]]:
        """Per sketch, the rows decoded ahead for it under the present conditions (a list to take
        from and add to); rows decoded under others are dropped. The conditions are read once a
        call: the weights' version sums over every parameter."""
        conditions = (self.profile, self.base_only, self.sampling, self.filters, self.net.weights_version())
        self._ahead = {k: v for k, v in self._ahead.items() if v[0]() is not None}  # forget dead sketches
        out = []
        for sketch in sketches:
            ref, made_under, kept = self._ahead.get(id(sketch), (None, None, None))
            if ref is None or ref() is not sketch or made_under != conditions or kept is None:
                kept = []
                self._ahead[id(sketch)] = (weakref.ref(sketch), conditions, kept)
            out.append(kept)
        return out

    def _decode(self, sketches: Sequence[Sketch], picks: list[int], vector: torch.Tensor,
                generator: torch.Generator) -> list[tuple[int, list[Decision]]]:  # fmt: skip
        """(sketch index, decisions) for each pick, ``batch`` rows at a time."""
        config = self.net.config
        features = None
        if config.experts and config.workload_aware:
            features = torch.tensor(np.stack([workload_features(s.mod) for s in sketches]))
        task_gates = self._task_gates(sketches, vector, None if features is None else features[0])
        out = []
        for start in range(0, len(picks), self.batch):
            chunk = picks[start : start + self.batch]
            hardware = vector.expand(len(chunk), -1) if config.hardware_grounding or config.experts else None
            workload = features[chunk] if features is not None else None
            gates = torch.zeros(1, len(config.experts)) if self.base_only else task_gates
            decisions = sample_decisions(self.net, [sketches[i] for i in chunk], config.hardware_tokens(self.profile),
                                         hardware, generator, self.sampling, self.filters + self.device, workload,
                                         gates)  # fmt: skip
            out += list(zip(chunk, decisions))
        return out

    def observe(self, sketch: Sketch, decisions: Sequence[Decision], latency_s: float | None) -> None:
        if latency_s is not None and (self.adapt.steps or self.choice.top):
            task = int(tvm_ffi.structural_hash(sketch.mod))
            self.measured.append((task, sketch, list(decisions), latency_s))
            self._fresh = True
            self._unchosen.add(task)

    def _task_gates(self, sketches: Sequence[Sketch], vector: torch.Tensor,
                    workload: torch.Tensor | None) -> torch.Tensor | None:  # fmt: skip
        """The gates this task's round samples with (None: the router's): ``ExpertChoice``, made
        again when the task has new measurements. ``sketches`` are one task's."""
        config = self.net.config
        if not self.choice.top or not config.experts or self.base_only or not sketches:
            return None
        task = int(tvm_ffi.structural_hash(sketches[0].mod))
        if task in self._unchosen:
            self._unchosen.discard(task)
            self._choose_experts(task, vector, workload)
        return self.chosen_gates.get(task)

    def _choose_experts(self, task: int, vector: torch.Tensor, workload: torch.Tensor | None) -> None:
        """Score the task's fastest measurements under each candidate mix; keep the likeliest."""
        config = self.net.config
        mine = [(s, d, lat) for t, s, d, lat in self.measured if t == task]
        best = min(lat for _, _, lat in mine)
        ordered = sorted(mine, key=lambda m: m[2])
        experts = len(config.experts)
        with torch.no_grad():
            router = self.net.gates(vector[None], None if workload is None else workload[None], 1)
        candidates = torch.cat([router, torch.zeros(1, experts), torch.eye(experts)])
        names = ["router", "base", *config.experts]
        hardware = vector if config.hardware_grounding or config.experts else None
        total, weight, scored = torch.zeros(len(names)), 0.0, 0
        for sketch, decisions, latency in ordered:
            if scored == self.choice.top:
                break
            try:
                probs, _ = legal_token_probabilities(self.net, sketch, decisions, config.hardware_tokens(self.profile),
                                                     hardware, self.filters + self.device, workload, candidates)  # fmt: skip
            except ValueError:
                continue  # e.g. a refined schedule whose mutated tile size the language has no token for
            scored += 1
            if probs.shape[1]:
                total += best / latency * torch.tensor(np.log(np.maximum(probs, 1e-12)).sum(axis=1))
                weight += best / latency * probs.shape[1]
        if not weight:
            return  # nothing to choose from (no decision had a choice)
        pick = int(torch.argmax(total))
        self.chosen_gates[task] = None if pick == 0 else candidates[pick : pick + 1]
        self.choices.append(names[pick])
        logger.info("TensorGPT: expert choice for task %x: %s (%.3f nats/token; router %.3f) from %d measurements",
                    task, names[pick], -float(total[pick]) / weight, -float(total[0]) / weight, scored)  # fmt: skip

    def _adapt(self, vector: torch.Tensor) -> None:
        """``adapt.steps`` weighted SFT steps on the fastest measurements of each task so far."""
        config = self.net.config
        best: dict[int, float] = {}
        for task, _, _, latency in self.measured:
            best[task] = min(best.get(task, latency), latency)
        top = sorted(self.measured, key=lambda m: m[3] / best[m[0]])[: self.adapt.top]
        batch = collate([_example(s, d, best[t] / lat, vector, self.net, self.profile) for t, s, d, lat in top])
        if self._optimizer is None:
            params = [p for n, p in self.net.named_parameters() if not config.experts or "lora_" in n or "router" in n]
            self._optimizer = torch.optim.AdamW(params, lr=self.adapt.lr)
        params = [p for group in self._optimizer.param_groups for p in group["params"]]
        self.net.train()
        for p in self.net.parameters():
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
        for _ in range(self.adapt.steps):
            self._optimizer.zero_grad()
            loss = self.net.loss(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            self._optimizer.step()
        self.net.eval()
        self._fresh = False


def _example(sketch: Sketch, decisions: list[Decision], weight: float, vector: torch.Tensor,
             net: TensorGPTNetwork, profile: HardwareProfile | None) -> Example:  # fmt: skip
    assert profile is not None
    config = net.config
    workload = tuple(float(x) for x in workload_features(sketch.mod)) if config.experts else None
    return Example(VOCAB.encode(prompt_tokens(sketch, config.hardware_tokens(profile))),
                   VOCAB.encode(response_tokens(sketch, decisions)),
                   tuple(float(x) for x in vector), weight, workload)  # fmt: skip


@functools.lru_cache(maxsize=4)
def _load(path: str) -> tuple[TensorGPTNetwork, Standardizer]:
    """Checkpoints are loaded once per process (generators that adapt take a copy)."""
    return checkpoint.load_checkpoint(path)


def default_generator(adapt: AdaptConfig = AdaptConfig()) -> Generator:
    """The bundled checkpoint's generator, or the prior (with a warning) when none is bundled."""
    if not checkpoint.has_default_checkpoint():
        logger.warning("TensorGPT: no bundled checkpoint in %s; proposing from the prior (uniform legal "
                       "decisions). Rebuild it as docs/model.md says.", checkpoint.DEFAULT_CHECKPOINT)  # fmt: skip
        return PriorGenerator()
    return ModelGenerator.from_checkpoint(checkpoint.DEFAULT_CHECKPOINT, adapt=adapt)
