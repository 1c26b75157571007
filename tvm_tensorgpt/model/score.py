"""How likely the network finds a given decision set, under the masks it samples with.

Held-out fit (``train.fit``) and the generator's expert choice (``generators.model``) both ask it:
the probability of each of the record's tokens among the tokens legal at that step (the softmax
renormalised over them, as masked sampling at temperature 1 draws), at every step that has a choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..language import VOCAB, Decision, DecodingState, Filter, Sketch, prompt_tokens, response_tokens
from .network import TensorGPTNetwork


@torch.no_grad()
def legal_token_probabilities(
    net: TensorGPTNetwork,
    sketch: Sketch,
    decisions: Sequence[Decision],
    hardware_tokens: Sequence[str],
    hardware: torch.Tensor | None,
    filters: Sequence[Filter] = (),
    workload: torch.Tensor | None = None,
    gates: torch.Tensor | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities (H, T), legal counts (T,)) over the T steps with more than one legal token.

    ``hardware`` (24,) and ``workload`` (W,) are one device's and one workload's (None where the
    network does not use them); ``gates`` (H, E) scores under H expert mixes in one batch (one-hot:
    an expert alone, zeros: the base alone), else the router's (H = 1). Raises ValueError where a
    decision is not one the masks allow (e.g. a mutated tile size the vocabulary has no token for).
    """
    net.eval()
    prompt = VOCAB.encode(prompt_tokens(sketch, list(hardware_tokens)))
    response = response_tokens(sketch, list(decisions))
    rows = 1 if gates is None else gates.shape[0]
    ids = torch.tensor([prompt + VOCAB.encode(response)]).expand(rows, -1)
    logits, _ = net(ids, torch.ones_like(ids), None if hardware is None else hardware[None].expand(rows, -1),
                    workload=None if workload is None else workload[None].expand(rows, -1), gates=gates)  # fmt: skip
    state = DecodingState(sketch, tuple(filters))
    probs, counts = [], []
    for position, token in enumerate(response):
        legal = state.legal_tokens()
        if token not in legal:
            raise ValueError(f"decision token {token!r} at response step {position} is not legal there "
                             f"(legal: {legal[:8]}{'...' if len(legal) > 8 else ''})")  # fmt: skip
        if len(legal) > 1:
            row = logits[:, len(prompt) + position - 1, VOCAB.encode(legal)]
            probs.append(torch.softmax(row, dim=1)[:, legal.index(token)])
            counts.append(len(legal))
        state.step(token)
    out = torch.stack(probs, dim=1).numpy() if probs else np.zeros((rows, 0))
    return out, np.asarray(counts, dtype=float)
