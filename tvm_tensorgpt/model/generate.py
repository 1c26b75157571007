"""Batched sampling with KV cache under the language's legality masks.

Every step masks the logits to the tokens ``DecodingState`` allows for each sequence, so decoded
decision sets are structurally valid by construction. Temperature and top-p (nucleus) shape the
distribution; temperature 0 is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..language import VOCAB, Decision, DecisionFilter, DecodingState, Sketch, prompt_tokens
from .network import TensorGPTNetwork


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0
    top_p: float = 0.95


def _pick(logits: torch.Tensor, legal: list[int], config: SamplingConfig, rng: torch.Generator) -> int:
    masked = torch.full_like(logits, float("-inf"))
    masked[legal] = logits[legal]
    if config.temperature <= 0:
        return int(masked.argmax())
    probs = torch.softmax(masked / config.temperature, dim=-1)
    if config.top_p < 1.0:
        ordered, index = probs.sort(descending=True)
        keep = ordered.cumsum(0) - ordered < config.top_p  # always keeps the most likely token
        probs = torch.zeros_like(probs).scatter(0, index[keep], ordered[keep])
    return int(torch.multinomial(probs, 1, generator=rng))


@torch.no_grad()
def sample_decisions(
    net: TensorGPTNetwork,
    sketches: Sequence[Sketch],
    hardware_tokens: Sequence[str],
    hardware: torch.Tensor | None,
    rng: torch.Generator,
    config: SamplingConfig = SamplingConfig(),
    filters: Sequence[DecisionFilter] = (),
    workload: torch.Tensor | None = None,
) -> list[list[Decision]]:
    """One decision set per sketch (repeat a sketch to get several), decoded in one batch.

    ``hardware`` is the standardized vector and ``workload`` the workload features (for the
    experts' router), one row per sketch each; None where the model does not use them.
    """
    net.eval()
    prompts = [VOCAB.encode(prompt_tokens(s, hardware_tokens)) for s in sketches]
    states = [DecodingState(s, filters) for s in sketches]
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    logits, cache = net(ids, mask, hardware, workload=workload)
    seen = mask.sum(dim=1)
    last = logits[:, -1]
    eos = VOCAB.id("<eos>")
    while not all(state.done for state in states):
        chosen = []
        for row, state in zip(last, states):
            if state.done:
                chosen.append(eos)
                continue
            token = _pick(row, VOCAB.encode(state.legal_tokens()), config, rng)
            state.step(VOCAB.tokens[token])
            chosen.append(token)
        mask = torch.cat([mask, torch.ones(len(states), 1, dtype=mask.dtype)], dim=1)
        logits, cache = net(torch.tensor(chosen)[:, None], mask, hardware, cache=cache, past_tokens=seen,
                            workload=workload)  # fmt: skip
        seen = seen + 1
        last = logits[:, -1]
    return [state.decisions() for state in states]
