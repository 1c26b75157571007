"""Batched sampling under the language's legality masks.

Every step masks the logits to the tokens ``DecodingState`` allows for each sequence, so decoded
decision sets are structurally valid by construction. Temperature, top-p (nucleus) and a per-step
mixture with the uniform prior shape the distribution; temperature 0 is greedy.

A round repeats a few sketches many times, so rows are decoded per prompt (same sketch, hardware
vector and workload features): the prompt runs once and every row attends to it
(``PromptDecoder``), the rows share their legal sets (``DecodingState.copy``: a mask is computed
once per distinct legality key, not per row), the tokens every row must take first are decoded as
part of the prompt, and logits are computed only for the tokens some row may take.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..language import VOCAB, Decision, DecodingState, Filter, Sketch, prompt_tokens
from .decoder import PromptDecoder
from .network import TensorGPTNetwork


@dataclass(frozen=True)
class SamplingConfig:
    """``prior_mix``: each step samples from ``(1 - prior_mix) * model + prior_mix * uniform`` over
    the legal tokens. A model trained on some tasks is over-confident on others; on the held-out
    tasks the bundled checkpoint alone fits worse than the uniform prior, mixed per token it fits
    better (``benchmarks/fit.py --prior-mix``, docs/model.md)."""

    temperature: float = 1.0
    top_p: float = 0.95
    prior_mix: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.prior_mix <= 1.0:
            raise ValueError(f"prior_mix is a probability (0 = the model alone, 1 = uniform), not {self.prior_mix}")


def _pick(logits: torch.Tensor, allowed: torch.Tensor, config: SamplingConfig, rng: torch.Generator) -> list[int]:
    """One column per row of ``logits`` (B, C), each restricted to the columns ``allowed`` (B, C)."""
    masked = logits.masked_fill(~allowed, float("-inf"))
    if config.temperature <= 0:
        return masked.argmax(dim=1).tolist()
    probs = torch.softmax(masked / config.temperature, dim=1)
    if config.top_p < 1.0:
        ordered, index = probs.sort(dim=1, descending=True)
        drop = ordered.cumsum(dim=1) - ordered >= config.top_p  # always keeps the most likely token
        probs = torch.zeros_like(probs).scatter(1, index, ordered.masked_fill(drop, 0.0))
    if config.prior_mix > 0:
        uniform = allowed.float() / allowed.sum(dim=1, keepdim=True)
        probs = (1 - config.prior_mix) * probs / probs.sum(dim=1, keepdim=True) + config.prior_mix * uniform
    return torch.multinomial(probs, 1, generator=rng).squeeze(1).tolist()


def _step(decoder: PromptDecoder, states: Sequence[DecodingState], config: SamplingConfig,
          rng: torch.Generator) -> list[int]:  # fmt: skip
    """One legal token id per state, from the decoder's next-token distribution masked to it."""
    legal: dict[tuple, tuple[int, list[int]]] = {}  # legality key -> (mask row, legal ids)
    rows = []
    for state in states:
        key = state.key
        if key not in legal:
            legal[key] = (len(legal), VOCAB.encode(state.legal_tokens()))
        rows.append(legal[key][0])
    ids = sorted({i for _, some in legal.values() for i in some})  # ascending: argmax ties as before
    column = {token: c for c, token in enumerate(ids)}
    masks = torch.zeros(len(legal), len(ids), dtype=torch.bool)
    for row, some in legal.values():
        masks[row, [column[token] for token in some]] = True
    picked = _pick(decoder.logits(torch.tensor(ids)), masks[torch.tensor(rows)], config, rng)
    return [ids[c] for c in picked]


def _sample_prompt(net: TensorGPTNetwork, sketch: Sketch, prompt: list[int], hardware: torch.Tensor | None,
                   workload: torch.Tensor | None, gates: torch.Tensor | None, rows: int, config: SamplingConfig,
                   filters: Sequence[Filter], rng: torch.Generator) -> list[list[Decision]]:  # fmt: skip
    """``rows`` decision sets for one sketch and one conditioning."""
    first = DecodingState(sketch, filters)
    while not first.done and len(first.legal_tokens()) == 1:  # taken by every row: part of the prompt
        first.step(first.legal_tokens()[0])
    states = [first.copy() for _ in range(rows)]
    if first.done:
        return [state.decisions() for state in states]
    steps = sum(slot.num_tokens for slot in sketch.slots) - len(first.tokens)
    decoder = PromptDecoder(net, prompt + VOCAB.encode(first.tokens), hardware, workload, gates, rows, steps)
    while True:
        chosen = _step(decoder, states, config, rng)
        for state, token in zip(states, chosen):
            state.step(VOCAB.tokens[token])
        if states[0].done:  # the rows of one sketch take the same number of tokens
            return [state.decisions() for state in states]
        decoder.feed(chosen)


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
    """One decision set per sketch (repeat a sketch to get several).

    ``hardware`` is the standardized vector and ``workload`` the workload features (for the
    experts' router), one row per sketch each; None where the model does not use them; ``gates``
    (one row) overrides the router (zeros: the base model alone).
    """
    net.eval()
    groups: dict[tuple, list[int]] = {}
    for row, sketch in enumerate(sketches):
        key = (id(sketch),
               None if hardware is None else hardware[row].numpy().tobytes(),
               None if workload is None else workload[row].numpy().tobytes())  # fmt: skip
        groups.setdefault(key, []).append(row)
    out: list[list[Decision]] = [[] for _ in sketches]
    for rows in groups.values():
        head = rows[0]
        decided = _sample_prompt(net, sketches[head], VOCAB.encode(prompt_tokens(sketches[head], hardware_tokens)),
                                 None if hardware is None else hardware[head],
                                 None if workload is None else workload[head],
                                 None if gates is None else gates[0], len(rows), config, filters, rng)  # fmt: skip
        for row, decisions in zip(rows, decided):
            out[row] = decisions
    return out
