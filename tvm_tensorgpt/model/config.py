"""Configuration of the TensorGPT generator (one dataclass, saved with every checkpoint)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..hardware.vector import VECTOR_DIM
from ..language.vocab import VOCAB, VOCAB_VERSION


@dataclass(frozen=True)
class ModelConfig:
    """A small Llama-class decoder over the schedule language, plus hardware grounding.

    ``prefix_slots`` key/value slots per layer come from the standardized hardware vector
    (technique #1, continuous channel); ``hardware_grounding=False`` drops the prefix (the
    TLM-style variant).
    """

    vocab_size: int = len(VOCAB)
    vocab_version: int = VOCAB_VERSION
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    intermediate: int = 688
    max_positions: int = 1024
    hardware_dim: int = VECTOR_DIM
    prefix_slots: int = 4
    prefix_hidden: int = 128
    hardware_grounding: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"checkpoint config has fields this version does not know: {unknown}")
        config = cls(**data)
        if config.vocab_size != len(VOCAB) or config.vocab_version != VOCAB_VERSION:
            raise ValueError(
                f"checkpoint was trained on vocabulary v{config.vocab_version} ({config.vocab_size} tokens); "
                f"this package has v{VOCAB_VERSION} ({len(VOCAB)} tokens): retrain the checkpoint"
            )
        return config
