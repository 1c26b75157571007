"""Supervised fine-tuning on (prompt, response) pairs: causal LM with the loss on decisions only.

``weight`` lets training favour fast schedules (TLM's best-per-prompt SFT puts weight 1 on the best
record of a prompt and less on others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from ..language import VOCAB
from ..model import TensorGPTNetwork

IGNORE = -100


@dataclass(frozen=True)
class Example:
    prompt: list[int]
    response: list[int]
    hardware: tuple[float, ...] | None = None
    weight: float = 1.0
    workload: tuple[float, ...] | None = None


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


def loss_on(net: TensorGPTNetwork, batch: dict[str, torch.Tensor | None],
            gates: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """Weighted mean next-token cross-entropy over response tokens (``gates``: fixed expert mix)."""
    logits, _ = net(batch["input_ids"], batch["attention_mask"], batch["hardware"],  # type: ignore[arg-type]
                    workload=batch["workload"], gates=gates)  # fmt: skip
    labels = batch["labels"][:, 1:]  # type: ignore[index]
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2), labels, ignore_index=IGNORE, reduction="none")
    counted = (labels != IGNORE).float()
    per_example = (per_token * counted).sum(1) / counted.sum(1).clamp(min=1)
    weights = batch["weights"]
    return (per_example * weights).sum() / weights.sum()  # type: ignore[union-attr]
