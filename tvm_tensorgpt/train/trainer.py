"""Training in the seed's three stages: base, one LoRA expert per source device, router.

``python -m tvm_tensorgpt train --out DIR`` (base) and ``train --stage experts --base DIR --out
DIR2``: examples from ``data/records/<profile>/`` (held-out tasks and the held-out profile
excluded), validation on whole tasks (seeded), AdamW; checkpoints are ``DIR/`` folders (config.json +
model.safetensors + training.json with the losses). Re-running with the same ``--out`` resumes
(after the last finished epoch, or stage; the optimizer state restarts).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..data.collect import open_database
from ..data.split import heldout_tasks, source_profiles
from ..data.stats import data_fingerprint
from ..hardware import get_profile, universe_standardizer
from ..model import Example, ModelConfig, TensorGPTNetwork, collate
from ..model.checkpoint import WEIGHTS_FILE, load_checkpoint, save_checkpoint
from .dataset import examples_from_database

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


def load_examples(data_dir: str | Path, model: ModelConfig, profiles: list[str] | None = None,
                  limit: int | None = None, min_weight: float = 0.0) -> dict[str, list[Example]]:  # fmt: skip
    """Examples per source profile from its database (never the held-out profile or tasks), with
    the prompt's hardware section the model expects (bucket or target string); ``limit``: only
    each database's first records; ``min_weight``: see ``examples_from_database``."""
    standardizer = universe_standardizer()
    exclude = [t.mod for t in heldout_tasks()]
    out: dict[str, list[Example]] = {}
    root = Path(data_dir)
    for name in source_profiles(root, profiles):
        profile = get_profile(name)
        examples, stats = examples_from_database(open_database(root / name), profile, standardizer,
                                                 model.hardware_tokens(profile), exclude, limit,
                                                 min_weight=min_weight)  # fmt: skip
        logger.info("%s: %s", name, stats)
        out[name] = examples
    return out


def training_data(data_dir: str | Path, profiles: list[str] | None = None) -> dict:
    """Which records ``load_examples`` reads (``data.stats.data_fingerprint``), for a checkpoint's
    training.json: taken before reading, since a collection may append meanwhile."""
    return data_fingerprint(data_dir, source_profiles(data_dir, profiles))


def _check_same_data(state: dict, data: dict | None, out: Path) -> None:
    """Resuming on other records would mix two datasets in one checkpoint."""
    known = state.get("data")
    if data and known and known["sha256"] != data["sha256"]:
        raise ValueError(f"{out} was trained on other records (profiles {', '.join(known['profiles'])}, sha256 "
                         f"{known['sha256'][:12]}) than these ({', '.join(data['profiles'])}, {data['sha256'][:12]}): "
                         "resume it on the same data, or train into a new --out")  # fmt: skip


def _batches(examples: list[Example], size: int, rng: random.Random) -> list[list[Example]]:
    order = list(examples)
    rng.shuffle(order)
    return [order[i : i + size] for i in range(0, len(order), size)]


@torch.no_grad()
def evaluate(net: TensorGPTNetwork, examples: list[Example], batch: int, gates: torch.Tensor | None = None) -> float:
    net.eval()
    losses = []
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        losses.append(float(net.loss(collate(chunk), None if gates is None else gates.expand(len(chunk), -1))))
    return sum(losses) / max(1, len(losses))


def _split(examples: list[Example], config: TrainConfig) -> tuple[list[Example], list[Example]]:
    """(training, validation), seeded. Validation holds out whole tasks (``config.validation`` of
    them): the model is used on workloads it never saw, and a random share of records would let
    validation reward memorising a task's other records. A task's draw depends only on the seed and
    the task, so every profile (and every expert) holds out the same ones. Examples without tasks
    (or of one task) are split by example instead."""
    tasks = {e.task for e in examples} - {None}
    if len(tasks) < 2 or any(e.task is None for e in examples):
        shuffled = list(examples)
        random.Random(config.seed).shuffle(shuffled)
        cut = max(1, int(len(shuffled) * config.validation))
        return shuffled[cut:], shuffled[:cut]
    draw = sorted(tasks, key=lambda task: random.Random(f"{config.seed}:{task}").random())
    held = set(draw[: max(1, round(len(draw) * config.validation))])
    return [e for e in examples if e.task not in held], [e for e in examples if e.task in held]


def _fit(net: TensorGPTNetwork, examples: list[Example], params: list[torch.nn.Parameter], config: TrainConfig,
         label: str, gates: torch.Tensor | None = None, first_epoch: int = 0) -> list[dict]:  # fmt: skip
    """Train ``params`` (everything else frozen) for ``config.epochs``; one row of losses per epoch.

    The validation split depends on ``config.seed`` only; ``first_epoch`` continues the shuffling
    (and the labels) of an earlier call, so training one epoch per call equals one longer call."""
    from tqdm import tqdm

    training, valid = _split(examples, config)
    chosen = {id(p) for p in params}
    for p in net.parameters():
        p.requires_grad_(id(p) in chosen)
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    history = []
    for epoch in range(first_epoch, first_epoch + config.epochs):
        net.train()
        batches = _batches(training, config.batch, random.Random(config.seed * 1000 + epoch))
        total = 0.0
        bar = tqdm(batches, desc=f"{label} epoch {epoch + 1}", file=sys.stderr, mininterval=5)
        for i, batch in enumerate(bar, start=1):
            optimizer.zero_grad()
            loss = net.loss(collate(batch), None if gates is None else gates.expand(len(batch), -1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            total += loss.item()
            bar.set_postfix(loss=f"{total / i:.4f}", refresh=False)
        # the validation's size beside its loss: one small held-out task can make it near 0 or large
        history.append({"stage": label, "epoch": epoch + 1, "train_loss": total / max(1, len(batches)),
                        "valid_loss": evaluate(net, valid, config.batch, gates) if valid else None,
                        "valid_tasks": len({e.task for e in valid}), "valid_examples": len(valid)})  # fmt: skip
        shown = "n/a" if not valid else f"{history[-1]['valid_loss']:.4f}"
        print(f"{label} epoch {epoch + 1}: train {history[-1]['train_loss']:.4f}, valid {shown} "
              f"({history[-1]['valid_tasks']} tasks, {len(valid)} examples)", file=sys.stderr)  # fmt: skip
    return history


def train(examples: list[Example], out: str | Path, model: ModelConfig = ModelConfig(),
          config: TrainConfig = TrainConfig(), init: str | Path | None = None, data: dict | None = None) -> dict:  # fmt: skip
    """Base stage: every parameter on every source profile's examples; one checkpoint per epoch.

    ``init`` starts from a trained checkpoint of the same config instead of random weights (TLM-CT:
    TLM trained further on the data TensorGPT uses). ``data`` (``training_data``) goes to
    training.json, and a resume on other data is refused."""
    if not examples:
        raise ValueError("no training examples: collect data first (`tensorgpt collect`, docs/data.md)")
    out = Path(out)
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    state_path = out / "training.json"
    if (out / WEIGHTS_FILE).exists() and state_path.exists():
        net, standardizer = load_checkpoint(out)
        state = json.loads(state_path.read_text())
        _check_same_data(state, data, out)
        logger.info("resuming %s after epoch %d", out, state["epochs_done"])
    elif init is not None:  # continued training (TLM-CT): the same network, more epochs
        net, standardizer = load_checkpoint(init)
        if dataclasses.replace(net.config, experts=()) != model or net.config.experts:
            raise ValueError(f"{init} is not a {model.hardware_prompt}-prompt base checkpoint of this size; "
                             "continue a checkpoint of the same variant")  # fmt: skip
        state = {"epochs_done": 0, "history": [], "train": asdict(config), "examples": len(examples),
                 "init": str(init), "data": data}  # fmt: skip
    else:
        net, standardizer = TensorGPTNetwork(model), universe_standardizer()
        state = {"epochs_done": 0, "history": [], "train": asdict(config), "examples": len(examples), "data": data}
    one_epoch = TrainConfig(**{**asdict(config), "epochs": 1})
    for epoch in range(state["epochs_done"], config.epochs):
        row = _fit(net, examples, list(net.parameters()), one_epoch, "base", first_epoch=epoch)[0]
        state["history"].append(row)
        state["epochs_done"] = epoch + 1
        save_checkpoint(out, net, standardizer)
        state_path.write_text(json.dumps(state, indent=1))
    return state


def train_experts(by_profile: dict[str, list[Example]], base: str | Path, out: str | Path,
                  config: TrainConfig = TrainConfig(), routing: str = "learned",
                  workload_aware: bool = True, data: dict | None = None) -> dict:  # fmt: skip
    """Experts stage, then router stage, on a trained base checkpoint.

    One peft LoRA expert per source profile, trained on that profile's examples alone with the
    base frozen and only its gate on; then the router, with base and experts frozen, on all
    examples. A finished stage is kept on re-run (resumable per stage, on the same ``data``).
    """
    out = Path(out)
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    state_path = out / "training.json"
    names = tuple(sorted(by_profile))
    if (out / WEIGHTS_FILE).exists() and state_path.exists():
        net, standardizer = load_checkpoint(out)
        state = json.loads(state_path.read_text())
        _check_same_data(state, data, out)
    else:
        net, standardizer = load_checkpoint(base)
        state = {"done": [], "history": [], "train": asdict(config), "base": str(base), "data": data}
        if net.config.experts:  # an experts checkpoint: keep its experts, train a new router
            if tuple(sorted(net.config.experts)) != names:
                raise ValueError(f"{base} has experts {list(net.config.experts)}, the data has profiles "
                                 f"{list(names)}; give a base checkpoint or matching data")  # fmt: skip
            net.reroute(routing, workload_aware)
            state["done"] = list(names)
        else:
            net.config = dataclasses.replace(net.config, routing=routing, workload_aware=workload_aware)
            net.add_experts(names)
    for index, name in enumerate(names):
        if name in state["done"]:
            continue
        gates = torch.nn.functional.one_hot(torch.tensor([index]), len(names)).float()
        params = [p for n, p in net.named_parameters() if "lora_" in n and f".{name}." in n]
        state["history"] += _fit(net, by_profile[name], params, config, f"expert {name}", gates)
        state["done"].append(name)
        save_checkpoint(out, net, standardizer)
        state_path.write_text(json.dumps(state, indent=1))
    if "router" not in state["done"] and net.router is not None:
        everything = [e for name in names for e in by_profile[name]]
        state["history"] += _fit(net, everything, list(net.router.parameters()), config, "router")
        state["done"].append("router")
    save_checkpoint(out, net, standardizer)
    state_path.write_text(json.dumps(state, indent=1))
    return state
