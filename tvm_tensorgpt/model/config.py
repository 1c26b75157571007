"""Configuration of the TensorGPT generator (one dataclass, saved with every checkpoint)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..hardware.profile import HardwareProfile
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
    "w/o routing" ablation). No experts is the "no experts" variant. ``intermediate`` left out is
    Llama's SwiGLU width, 8/3 × ``hidden`` (what every shipped checkpoint uses).
    """

    vocab_size: int = len(VOCAB)
    vocab_version: int = VOCAB_VERSION
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    intermediate: int | None = None  # None: hidden * 8 // 3
    max_positions: int = 1024
    hardware_dim: int = VECTOR_DIM
    prefix_slots: int = 4
    prefix_hidden: int = 128
    hardware_grounding: bool = True
    hardware_prompt: str = "bucket"  # bucket (TensorGPT) | target (TLM: the target string's tokens)
    experts: tuple[str, ...] = ()
    lora_rank: int = 8
    routing: str = "learned"  # learned | uniform
    workload_aware: bool = True
    workload_dim: int = WORKLOAD_DIM
    router_hidden: int = 64

    def __post_init__(self) -> None:
        if self.hardware_prompt not in ("bucket", "target"):
            raise ValueError(f"hardware_prompt must be 'bucket' or 'target', not {self.hardware_prompt!r}")
        if self.routing not in ("learned", "uniform"):
            raise ValueError(f"routing must be 'learned' or 'uniform', not {self.routing!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.intermediate is None:
            object.__setattr__(self, "intermediate", self.hidden * 8 // 3)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def hardware_tokens(self, profile: HardwareProfile) -> list[str]:
        """The prompt's hardware section for ``profile``: its bucket token, or its target's tokens."""
        if self.hardware_prompt == "target":
            return VOCAB.target(profile.target)
        return [profile.bucket]

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


# The seed's method and ablations as config overrides (the benchmark's rows). TLM-CT is TLM trained
# further on all the data TensorGPT uses: same config, more training.
VARIANTS: dict[str, dict] = {
    "tensorgpt": {},
    "no-hg": {"hardware_grounding": False, "hardware_prompt": "target"},
    "no-routing": {"routing": "uniform"},
    "no-wa": {"workload_aware": False},
    "tlm": {"hardware_grounding": False, "hardware_prompt": "target"},
}
EXPERT_VARIANTS = ("tensorgpt", "no-hg", "no-routing", "no-wa")  # the ones with a mixture of experts


def variant_config(name: str, **sizes: int) -> ModelConfig:
    """The base-stage config of a variant (experts are added by the experts stage)."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return ModelConfig(**{**sizes, **VARIANTS[name]})
