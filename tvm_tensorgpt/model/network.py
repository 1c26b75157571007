"""The TensorGPT network: a transformers Llama decoder with hardware KV prefixes.

The standardized 24-D hardware vector goes through a small MLP to ``prefix_slots`` key/value pairs
per layer, handed to the decoder as its initial cache. Three details matter and are tested:
the cache is built fresh for every call (transformers mutates it in place), the attention mask
covers prefix + tokens (a mask over the tokens alone raises nothing and gives wrong logits), and
the tokens' position ids start at 0 (RoPE: the prefix slots take no positions).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from .config import ModelConfig


class HardwarePrefix(nn.Module):
    """hardware vector (B, 24) -> per-layer (key, value), each (B, heads, slots, head_dim)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        out = config.layers * 2 * config.prefix_slots * config.hidden
        self.mlp = nn.Sequential(
            nn.Linear(config.hardware_dim, config.prefix_hidden),
            nn.GELU(),
            nn.Linear(config.prefix_hidden, out),
        )

    def forward(self, hardware: torch.Tensor) -> DynamicCache:
        c = self.config
        batch = hardware.shape[0]
        kv = self.mlp(hardware).view(batch, c.layers, 2, c.heads, c.prefix_slots, c.head_dim)
        return DynamicCache([(kv[:, layer, 0], kv[:, layer, 1]) for layer in range(c.layers)])


class TensorGPTNetwork(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.lm = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=config.vocab_size,
                hidden_size=config.hidden,
                intermediate_size=config.intermediate,
                num_hidden_layers=config.layers,
                num_attention_heads=config.heads,
                num_key_value_heads=config.heads,
                max_position_embeddings=config.max_positions,
                pad_token_id=0,
                bos_token_id=1,
                eos_token_id=2,
            )
        )
        self.prefix = HardwarePrefix(config) if config.hardware_grounding else None

    @property
    def prefix_len(self) -> int:
        return self.config.prefix_slots if self.prefix is not None else 0

    def start(self, hardware: torch.Tensor | None, batch: int) -> DynamicCache | None:
        """A fresh cache holding the hardware prefix (None without hardware grounding)."""
        if self.prefix is None:
            return None
        if hardware is None or hardware.shape != (batch, self.config.hardware_dim):
            raise ValueError(f"expected a hardware tensor of shape ({batch}, {self.config.hardware_dim})")
        if not torch.isfinite(hardware).all():
            raise ValueError("hardware vector contains NaN or infinity")
        return self.prefix(hardware)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        hardware: torch.Tensor | None = None,
        cache: DynamicCache | None = None,
        past_tokens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, DynamicCache | None]:
        """Logits for ``input_ids`` (B, T) given ``attention_mask`` over *all* tokens so far.

        Without ``cache`` a fresh prefix cache is built and ``attention_mask`` is (B, T). When
        continuing a ``cache`` (generation), ``attention_mask`` covers the earlier tokens and these
        and ``past_tokens`` (B,) counts the real tokens already seen per sequence.
        """
        batch, length = input_ids.shape
        if cache is None:
            cache = self.start(hardware, batch)
            seen = torch.zeros(batch, dtype=torch.long, device=input_ids.device)
        else:
            seen = past_tokens if past_tokens is not None else torch.zeros(batch, dtype=torch.long)
        new_mask = attention_mask[:, -length:]
        position_ids = seen[:, None] + torch.cumsum(new_mask, dim=1) - 1
        position_ids = position_ids.clamp(min=0)
        prefix = torch.ones(batch, self.prefix_len, dtype=attention_mask.dtype, device=attention_mask.device)
        out = self.lm(
            input_ids=input_ids,
            attention_mask=torch.cat([prefix, attention_mask], dim=1),
            position_ids=position_ids,
            cache=cache,
            use_cache=True,
        )
        return out.logits, out.past_key_values
