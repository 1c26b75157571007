"""Checkpoints: a folder with ``config.json`` and ``model.safetensors`` (weights only, no pickle).

``config.json`` holds the model config, the vocabulary version it was trained on and the hardware
standardization (mean/std per dimension), so a device always gets the vector the model was
trained with.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..hardware.vector import Standardizer
from .config import ModelConfig
from .network import TensorGPTNetwork

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
# The checkpoint shipped in the package: what strategy="tensorgpt" proposes with by default.
DEFAULT_CHECKPOINT = Path(__file__).parent / "default"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and how to rebuild it."""


def has_default_checkpoint() -> bool:
    return (DEFAULT_CHECKPOINT / WEIGHTS_FILE).exists()


def save_checkpoint(path: str | Path, net: TensorGPTNetwork, standardizer: Standardizer,
                    dtype: torch.dtype = torch.float32) -> Path:  # fmt: skip
    """Write the folder; ``dtype=torch.float16`` halves the file (bundled checkpoints; loading
    always returns float32, so training resumes from float32 folders only)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    meta = {"model": net.config.to_dict(), "hardware_standardizer": standardizer.to_dict(), "format": 1}
    (path / CONFIG_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    state = {k: v.detach().to(dtype).contiguous() if v.is_floating_point() else v.detach().contiguous()
             for k, v in net.state_dict().items()}  # fmt: skip
    # tied weights share storage; safetensors refuses shared tensors, so store the copies apart
    save_file({k: v.clone() for k, v in state.items()}, str(path / WEIGHTS_FILE))
    return path


def read_config(path: str | Path) -> ModelConfig:
    """The model config of a checkpoint folder, without loading its weights."""
    config_path = Path(path) / CONFIG_FILE
    try:
        return ModelConfig.from_dict(json.loads(config_path.read_text(encoding="utf-8"))["model"])
    except (OSError, json.JSONDecodeError, KeyError) as err:
        raise CheckpointError(f"cannot read {config_path} ({err}); rebuild it with `python -m tvm_tensorgpt train`") from None


def load_checkpoint(path: str | Path) -> tuple[TensorGPTNetwork, Standardizer]:
    path = Path(path)
    rebuild = "rebuild it with `python -m tvm_tensorgpt train` (docs/model.md)"
    config_path, weights_path = path / CONFIG_FILE, path / WEIGHTS_FILE
    for file in (config_path, weights_path):
        if not file.exists():
            raise CheckpointError(f"checkpoint file {file} is missing; {rebuild}")
    try:
        meta = json.loads(config_path.read_text(encoding="utf-8"))
        config = ModelConfig.from_dict(meta["model"])
        standardizer = Standardizer.from_dict(meta["hardware_standardizer"])
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise CheckpointError(f"checkpoint file {config_path} is corrupt ({err}); {rebuild}") from None
    except ValueError as err:
        raise CheckpointError(f"{config_path}: {err}") from None
    try:
        state = {k: v.float() if v.is_floating_point() else v for k, v in load_file(str(weights_path)).items()}
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"checkpoint file {weights_path} is corrupt ({err}); {rebuild}") from None
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise CheckpointError(f"{weights_path} holds NaN or infinite weights ({', '.join(bad[:3])}); {rebuild}")
    net = TensorGPTNetwork(config)
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    wrong = [f"{k} {tuple(v.shape)} vs {expected[k]}" for k, v in state.items() if k in expected and tuple(v.shape) != expected[k]]
    if wrong:
        raise CheckpointError(f"{weights_path} does not match the shapes of {config_path} ({'; '.join(wrong[:2])}); "
                              f"{rebuild}")  # fmt: skip
    missing, unexpected = net.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise CheckpointError(
            f"{weights_path} does not match its config (missing {missing[:3]}, unexpected {unexpected[:3]}); {rebuild}"
        )
    return net.eval(), standardizer


def bundle_checkpoint(source: str | Path, dest: str | Path, provenance: dict) -> Path:
    """Write ``source`` as a shippable checkpoint: float16 weights (half the size; loads as float32),
    its config, and ``provenance.json`` (``provenance`` plus the training histories of ``source``
    and of the base it was built on)."""
    source = Path(source)
    net, standardizer = load_checkpoint(source)
    dest = save_checkpoint(dest, net, standardizer, dtype=torch.float16)
    history = {}
    for folder in (source, Path(json.loads((source / "training.json").read_text()).get("base", source))
                   if (source / "training.json").exists() else source):  # fmt: skip
        state = folder / "training.json"
        if state.exists():
            history[str(folder)] = json.loads(state.read_text(encoding="utf-8"))
    meta = {**provenance, "source": str(source), "parameters": sum(p.numel() for p in net.parameters()),
            "bytes": (dest / WEIGHTS_FILE).stat().st_size, "training": history}  # fmt: skip
    (dest / "provenance.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return dest
