"""Base training: SFT of the network on every source profile's records.

``python -m tvm_tensorgpt train --out DIR``: examples from ``data/records/<profile>/`` (held-out
tasks and the held-out profile excluded), a seeded validation split, AdamW, one checkpoint per
epoch (``DIR/``: config.json + model.safetensors + training.json with the losses). Re-running with
the same ``--out`` resumes after the last finished epoch (the optimizer state restarts).
"""

from __future__ import annotations

import json
import logging
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..data.collect import open_database
from ..hardware import HELDOUT_HOST, get_profile, universe_standardizer
from ..model import ModelConfig, TensorGPTNetwork
from ..model.checkpoint import WEIGHTS_FILE, load_checkpoint, save_checkpoint
from ..workloads.tasks import heldout_tasks
from .dataset import examples_from_database
from .sft import Example, collate, loss_on

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 3
    batch: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.01
    validation: float = 0.05
    seed: int = 0
    threads: int = 2


def load_examples(data_dir: str | Path, profiles: list[str] | None = None) -> list[Example]:
    """Examples from each source profile's database (never the held-out profile or tasks)."""
    standardizer = universe_standardizer()
    exclude = [t.mod for t in heldout_tasks()]
    out: list[Example] = []
    root = Path(data_dir)
    names = profiles or sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != HELDOUT_HOST)
    for name in names:
        if name == HELDOUT_HOST:
            raise ValueError(f"{HELDOUT_HOST} is held out: it never provides training data")
        examples, stats = examples_from_database(open_database(root / name), get_profile(name), standardizer,
                                                 exclude=exclude)  # fmt: skip
        logger.info("%s: %s", name, stats)
        out += examples
    return out


def _batches(examples: list[Example], size: int, rng: random.Random) -> list[list[Example]]:
    order = list(examples)
    rng.shuffle(order)
    return [order[i : i + size] for i in range(0, len(order), size)]


@torch.no_grad()
def evaluate(net: TensorGPTNetwork, examples: list[Example], batch: int) -> float:
    net.eval()
    losses = [float(loss_on(net, collate(examples[i : i + batch]))) for i in range(0, len(examples), batch)]
    return sum(losses) / max(1, len(losses))


def train(examples: list[Example], out: str | Path, model: ModelConfig = ModelConfig(),
          config: TrainConfig = TrainConfig()) -> dict:  # fmt: skip
    from tqdm import tqdm

    if not examples:
        raise ValueError("no training examples: collect data first (`tensorgpt collect`, docs/data.md)")
    out = Path(out)
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    shuffled = list(examples)
    rng.shuffle(shuffled)
    cut = max(1, int(len(shuffled) * config.validation))
    valid, training = shuffled[:cut], shuffled[cut:]
    state_path = out / "training.json"
    if (out / WEIGHTS_FILE).exists() and state_path.exists():
        net, standardizer = load_checkpoint(out)
        state = json.loads(state_path.read_text())
        logger.info("resuming %s after epoch %d", out, state["epochs_done"])
    else:
        net, standardizer = TensorGPTNetwork(model), universe_standardizer()
        state = {"epochs_done": 0, "history": [], "train": asdict(config), "examples": len(examples)}
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    for epoch in range(state["epochs_done"], config.epochs):
        net.train()
        batches = _batches(training, config.batch, random.Random(config.seed * 1000 + epoch))
        total = 0.0
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{config.epochs}", file=sys.stderr, mininterval=5)
        for i, batch in enumerate(bar, start=1):
            optimizer.zero_grad()
            loss = loss_on(net, collate(batch))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
            total += float(loss)
            bar.set_postfix(loss=f"{total / i:.4f}", refresh=False)
        row = {"epoch": epoch + 1, "train_loss": total / max(1, len(batches)),
               "valid_loss": evaluate(net, valid, config.batch)}  # fmt: skip
        state["history"].append(row)
        state["epochs_done"] = epoch + 1
        save_checkpoint(out, net, standardizer)
        state_path.write_text(json.dumps(state, indent=1))
        print(f"epoch {row['epoch']}: train {row['train_loss']:.4f}, valid {row['valid_loss']:.4f}", file=sys.stderr)
    return state
