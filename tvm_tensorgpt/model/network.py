"""The TensorGPT network: a transformers Llama decoder with hardware KV prefixes and routed experts.

The standardized 24-D hardware vector goes through a small MLP to ``prefix_slots`` key/value pairs
per layer, handed to the decoder as its initial cache. Three details matter and are tested:
the cache is built fresh for every call (transformers mutates it in place), the attention mask
covers prefix + tokens (a mask over the tokens alone raises nothing and gives wrong logits), and
the tokens' position ids start at 0 (RoPE: the prefix slots take no positions).

Experts (technique #2) are peft LoRA adapters, one per source device, on every attention and MLP
projection, all active at once. peft has no per-sample mixture, so the only code here is the
routing: a hook on each adapter's ``lora_B`` scales its output by that sample's gate, giving
``base + sum_i g_i * LoRA_i`` in one forward pass. The router's softmax has one more slot than
there are experts, the base channel, so a device unlike every source can fall back to the base.
"""

from __future__ import annotations

import dataclasses
import functools

import torch
from peft import LoraConfig, get_peft_model
from peft.tuners.lora import LoraLayer
from torch import nn
from torch.nn import functional as F
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from .batch import IGNORE
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


EXPERT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class Router(nn.Module):
    """(hardware, workload features) -> per-sample gates over the experts (base channel dropped)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.workload_aware = config.workload_aware
        inputs = config.hardware_dim + (config.workload_dim if config.workload_aware else 0)
        self.mlp = nn.Sequential(nn.Linear(inputs, config.router_hidden), nn.GELU(),
                                 nn.Linear(config.router_hidden, len(config.experts) + 1))  # fmt: skip

    def forward(self, hardware: torch.Tensor, workload: torch.Tensor | None) -> torch.Tensor:
        if self.workload_aware:
            if workload is None:
                raise ValueError("a workload-aware router needs the workload features")
            hardware = torch.cat([hardware, workload], dim=1)
        return torch.softmax(self.mlp(hardware), dim=-1)[:, :-1]


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
        self.router: Router | None = None
        self._gates: torch.Tensor | None = None
        if config.experts:
            self.add_experts(config.experts)

    def add_experts(self, names: tuple[str, ...]) -> None:
        """Wrap the decoder with one LoRA expert per name (and a router unless routing is uniform).

        Called on a trained base network before the experts stage: the base weights stay as they are.
        """
        self.config = dataclasses.replace(self.config, experts=tuple(names))
        if self.config.routing == "learned":
            self.router = Router(self.config)
        names = list(names)
        lora = LoraConfig(r=self.config.lora_rank, lora_alpha=2 * self.config.lora_rank, lora_dropout=0.0,
                          target_modules=list(EXPERT_TARGETS))  # fmt: skip
        self.lm = get_peft_model(self.lm, lora, adapter_name=names[0])
        for name in names[1:]:
            self.lm.add_adapter(name, lora)
        self.lm.base_model.set_adapter(names)
        for module in self.lm.modules():
            if isinstance(module, LoraLayer):
                for index, name in enumerate(names):
                    module.lora_B[name].register_forward_hook(functools.partial(self._gate, index))

    def reroute(self, routing: str, workload_aware: bool) -> None:
        """Keep the trained experts, replace the router (the "w/o routing" / "w/o WA" ablations
        reuse one experts stage and differ only here)."""
        self.config = dataclasses.replace(self.config, routing=routing, workload_aware=workload_aware)
        self.router = Router(self.config) if routing == "learned" else None

    def _gate(self, index: int, module: nn.Module, inputs: object, output: torch.Tensor) -> torch.Tensor:
        gates = self._gates
        assert gates is not None, "expert gates are set by forward()"
        return output * gates[:, index].view(-1, *([1] * (output.dim() - 1)))

    def gates(self, hardware: torch.Tensor | None, workload: torch.Tensor | None, batch: int) -> torch.Tensor:
        """Expert weights per sample: the router's, or uniform (the "w/o routing" variant)."""
        experts = len(self.config.experts)
        if self.router is None:
            return torch.full((batch, experts), 1.0 / (experts + 1))
        if hardware is None:
            raise ValueError("routing needs the hardware vector")
        return self.router(hardware, workload)

    def causal_lm(self) -> LlamaForCausalLM:
        """The decoder itself (under peft's wrapper when there are experts)."""
        return self.lm.get_base_model() if self.config.experts else self.lm

    def merged_projection(self, module: nn.Module, gates: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight, bias) of one projection with the experts folded in for one sample's ``gates``
        (E,): the ``base + sum_i g_i * LoRA_i`` the gate hooks compute, as one matrix, for
        decoding many rows that share their gates (``model.decoder``)."""
        if not isinstance(module, LoraLayer):
            return module.weight, module.bias
        assert gates is not None, "experts need gates"
        base = module.get_base_layer()
        weight = base.weight
        for index, name in enumerate(self.config.experts):
            if name in module.active_adapters:
                weight = weight + gates[index] * module.get_delta_weight(name)
        return weight, base.bias

    def weights_version(self) -> int:
        """Changes whenever a parameter is modified in place (a training step, ``load_state_dict``;
        not an assignment through ``.data``): what decoding caches are keyed by."""
        return sum(p._version for p in self.parameters())

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
        workload: torch.Tensor | None = None,
        gates: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, DynamicCache | None]:
        """Logits for ``input_ids`` (B, T) given ``attention_mask`` over *all* tokens so far.

        Without ``cache`` a fresh prefix cache is built and ``attention_mask`` is (B, T). When
        continuing a ``cache`` (generation), ``attention_mask`` covers the earlier tokens and these
        and ``past_tokens`` (B,) counts the real tokens already seen per sequence. With experts,
        ``hardware`` and ``workload`` feed the router on every call (or ``gates`` are given, e.g.
        one-hot while an expert trains).
        """
        batch, length = input_ids.shape
        if self.config.experts:
            self._gates = gates if gates is not None else self.gates(hardware, workload, batch)
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
        return out.logits, out.cache

    def loss(self, batch: dict[str, torch.Tensor | None], gates: torch.Tensor | None = None) -> torch.Tensor:
        """Weighted mean next-token cross-entropy over response tokens of a ``collate``d batch
        (``gates``: a fixed expert mix, e.g. one-hot while an expert trains)."""
        logits, _ = self(batch["input_ids"], batch["attention_mask"], batch["hardware"],  # type: ignore[arg-type]
                         workload=batch["workload"], gates=gates)  # fmt: skip
        labels = batch["labels"][:, 1:]  # type: ignore[index]
        per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2), labels, ignore_index=IGNORE, reduction="none")
        counted = (labels != IGNORE).float()
        per_example = (per_token * counted).sum(1) / counted.sum(1).clamp(min=1)
        weights = batch["weights"]
        return (per_example * weights).sum() / weights.sum()  # type: ignore[union-attr]
