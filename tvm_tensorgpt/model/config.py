"""Configuration of the TensorGPT generator (one dataclass, saved with every checkpoint)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..hardware.vector import VECTOR_DIM
from ..language.vocab import VOCAB, VOCAB_VERSION
from ..workloads.features import WORKLOAD_DIM


@dataclass(frozen=True)
class ModelConfig:
    """A small Llama-class decoder over the schedule language, plus hardware grounding.

    ``prefix_slots`` key/value slots per layer come from the standardized hardware vector
    (technique #1, continuous channel); ``hardware_grounding=False`` drops the prefix (the
    TLM-style variant). ``experts`` names one peft LoRA adapter per source device (technique #2);
    ``routing`` "learned" mixes them with a router over the hardware vector and, when
    ``workload_aware``, the workload features; "uniform" gives every expert the same weight (the
    "w/o routing" ablation). No experts is the "no experts" variant.
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
    experts: tuple[str, ...] = ()
    lora_rank: int = 8
    routing: str = "learned"  # learned | uniform
    workload_aware: bool = True
    workload_dim: int = WORKLOAD_DIM
    router_hidden: int = 64

    def __post_init__(self) -> None:
        if self.routing not in ("learned", "uniform"):
            raise ValueError(f"routing must be 'learned' or 'uniform', not {self.routing!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")

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
        config = cls(**{**data, "experts": tuple(data.get("experts", ()))})
        if config.vocab_size != len(VOCAB) or config.vocab_version != VOCAB_VERSION:
            raise ValueError(
                f"checkpoint was trained on vocabulary v{config.vocab_version} ({config.vocab_size} tokens); "
                f"this package has v{VOCAB_VERSION} ({len(VOCAB)} tokens): retrain the checkpoint"
            )
        return config
