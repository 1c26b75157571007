"""Training examples as the network reads them: (prompt, response) pairs, batched.

Supervised fine-tuning is a causal LM with the loss on the response (the decisions) only:
``collate`` marks prompt and padding with ``IGNORE``; ``TensorGPTNetwork.loss`` reads the batch.
``weight`` lets training favour fast schedules (TLM's best-per-prompt SFT puts weight 1 on the best
record of a prompt and less on others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..language import VOCAB

IGNORE = -100


@dataclass(frozen=True)
class Example:
    """One (prompt, response) pair: token ids, the device's standardized vector, a weight, the
    workload features the router reads (experts only), and the task it came from (its structural
    hash: validation holds out whole tasks)."""

    prompt: list[int]
    response: list[int]
    hardware: tuple[float, ...] | None = None
    weight: float = 1.0
    workload: tuple[float, ...] | None = None
    task: int | None = None


def collate(examples: Sequence[Example]) -> dict[str, torch.Tensor | None]:
    """Right-padded ids, attention mask, labels (-100 on prompt and padding), hardware, weights."""
    width = max(len(e.prompt) + len(e.response) for e in examples)
    pad = VOCAB.id("<pad>")
    ids, mask, labels = [], [], []
    for e in examples:
        tokens = e.prompt + e.response
        gap = width - len(tokens)
        ids.append(tokens + [pad] * gap)
        mask.append([1] * len(tokens) + [0] * gap)
        labels.append([IGNORE] * len(e.prompt) + e.response + [IGNORE] * gap)
    hardware = None
    if examples[0].hardware is not None:
        hardware = torch.tensor([e.hardware for e in examples], dtype=torch.float32)
    workload = None
    if examples[0].workload is not None:
        workload = torch.tensor([e.workload for e in examples], dtype=torch.float32)
    return {
        "workload": workload,
        "input_ids": torch.tensor(ids),
        "attention_mask": torch.tensor(mask),
        "labels": torch.tensor(labels),
        "hardware": hardware,
        "weights": torch.tensor([e.weight for e in examples], dtype=torch.float32),
    }
