"""Batched sampling with KV cache under the language's legality masks.

Every step masks the logits to the tokens ``DecodingState`` allows for each sequence, so decoded
decision sets are structurally valid by construction. Temperature and top-p (nucleus) shape the
distribution; temperature 0 is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..language import VOCAB, Decision, DecodingState, Filter, Sketch, prompt_tokens
from .network import TensorGPTNetwork


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0
    top_p: float = 0.95


def _pick(logits: torch.Tensor, legal: list[list[int]], config: SamplingConfig, rng: torch.Generator) -> list[int]:
    """One token per row of ``logits`` (B, V), each restricted to its row of ``legal`` ids."""
    allowed = torch.zeros_like(logits, dtype=torch.bool)
    for row, ids in enumerate(legal):
        allowed[row, ids] = True
    masked = logits.masked_fill(~allowed, float("-inf"))
    if config.temperature <= 0:
        return masked.argmax(dim=1).tolist()
    probs = torch.softmax(masked / config.temperature, dim=1)
    if config.top_p < 1.0:
        ordered, index = probs.sort(dim=1, descending=True)
        drop = ordered.cumsum(dim=1) - ordered >= config.top_p  # always keeps the most likely token
        probs = torch.zeros_like(probs).scatter(1, index, ordered.masked_fill(drop, 0.0))
    return torch.multinomial(probs, 1, generator=rng).squeeze(1).tolist()


@torch.no_grad()
def sample_decisions(
    net: TensorGPTNetwork,
    sketches: Sequence[Sketch],
    hardware_tokens: Sequence[str],
    hardware: torch.Tensor | None,
    rng: torch.Generator,
    config: SamplingConfig = SamplingConfig(),
    filters: Sequence[Filter] = (),
    workload: torch.Tensor | None = None,
    gates: torch.Tensor | None = None,
) -> list[list[Decision]]:
    """One decision set per sketch (repeat a sketch to get several), decoded in one batch.

    ``hardware`` is the standardized vector and ``workload`` the workload features (for the
    experts' router), one row per sketch each; None where the model does not use them; ``gates``
    (one row) overrides the router (zeros: the base model alone). Rows with
    the same prompt and conditioning share one prefill (a round usually repeats a few sketches).
    """
    net.eval()
    prompts = [VOCAB.encode(prompt_tokens(s, hardware_tokens)) for s in sketches]
    states = [DecodingState(s, filters) for s in sketches]
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    groups: dict[tuple, int] = {}
    index = []
    for row, prompt in enumerate(prompts):
        key = (tuple(prompt),
               None if hardware is None else hardware[row].numpy().tobytes(),
               None if workload is None else workload[row].numpy().tobytes())  # fmt: skip
        index.append(groups.setdefault(key, row))
    firsts = sorted(set(index))
    position = {row: i for i, row in enumerate(firsts)}
    gather = torch.tensor([position[row] for row in index])
    pick = torch.tensor(firsts)
    fixed = None if gates is None else gates.expand(len(sketches), -1)
    logits, cache = net(ids[pick], mask[pick], None if hardware is None else hardware[pick],
                        workload=None if workload is None else workload[pick],
                        gates=None if fixed is None else fixed[pick])  # fmt: skip
    cache.reorder_cache(gather)  # expand the shared prefills to every row
    last = logits[:, -1][gather]
    seen = mask.sum(dim=1)
    eos = VOCAB.id("<eos>")
    while not all(state.done for state in states):
        legal = [VOCAB.encode(state.legal_tokens()) if not state.done else [eos] for state in states]
        chosen = _pick(last, legal, config, rng)
        for state, token in zip(states, chosen):
            if not state.done:
                state.step(VOCAB.tokens[token])
        mask = torch.cat([mask, torch.ones(len(states), 1, dtype=mask.dtype)], dim=1)
        logits, cache = net(torch.tensor(chosen)[:, None], mask, hardware, cache=cache, past_tokens=seen,
                            workload=workload, gates=fixed)  # fmt: skip
        seen = seen + 1
        last = logits[:, -1]
    return [state.decisions() for state in states]
