"""Decoding many continuations of one prompt at once: what sampling a pool of candidates runs.

``TensorGPTNetwork.forward`` with a cache is general (any rows, any prompts, per-sample expert
gates) and slow for this case: every row carries its own copy of the prompt's keys and values,
the cache grows by concatenation each step, and every projection runs base + three LoRA paths with
gate hooks. ``PromptDecoder`` runs the same network (the transformers modules and weights, same
positions and attention) specialised to rows that share a prompt, a hardware vector and workload
features, i.e. the expert gates:

- the prompt (after the hardware prefix) is run once, by ``TensorGPTNetwork.forward`` itself; its
  keys and values are attended by every row without being copied per row;
- each row's own keys and values go into buffers allocated once for the whole response, and rows
  whose tokens so far are the same (early in a response, many are) are computed once: a buffer
  slot holds one distinct history, and a history that branches is copied into a new slot;
- the experts are folded into the projection weights for the shared gates
  (``TensorGPTNetwork.merged_projection``), one matrix product per projection;
- logits are computed only for the vocabulary ids asked for (the legal tokens of the step);
- the prompt's keys, values and merged weights are kept for the last few prompts per network
  (``_PROMPTS``): a tune asks for the same sketch's prompt every round.

The results equal the general path up to float rounding (``tests/test_model.py`` checks it).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from .network import TensorGPTNetwork


@dataclass(frozen=True)
class _Prompt:
    """What every row of a prompt shares: its last logits, its keys and values per layer, and the
    projection weights with the experts folded in for its gates."""

    logits: torch.Tensor  # (1, V)
    kv: list[tuple[torch.Tensor, torch.Tensor]]  # per layer: (heads, prefix + prompt, d) keys, values
    layers: list[tuple[torch.nn.Module, dict[str, tuple[torch.Tensor, torch.Tensor | None]]]]


PROMPT_CACHE = 32  # prompts kept per network: a tune's sketches, each round
_PROMPTS: weakref.WeakKeyDictionary[TensorGPTNetwork, OrderedDict[tuple, _Prompt]] = weakref.WeakKeyDictionary()


@torch.no_grad()
def _run_prompt(net: TensorGPTNetwork, prompt: Sequence[int], hardware: torch.Tensor | None,
                workload: torch.Tensor | None, gates: torch.Tensor | None) -> _Prompt:  # fmt: skip
    """The prompt run once by ``TensorGPTNetwork.forward`` (cached per weights and conditioning)."""
    key = (net.weights_version(), tuple(prompt),
           *(None if t is None else (tuple(t.shape), t.numpy().tobytes()) for t in (hardware, workload, gates)))  # fmt: skip
    cache = _PROMPTS.setdefault(net, OrderedDict())
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    ids = torch.tensor([list(prompt)])
    hardware = None if hardware is None else hardware[None]
    workload = None if workload is None else workload[None]
    fixed = None if gates is None else gates.reshape(1, -1)
    logits, kv = net(ids, torch.ones_like(ids), hardware, workload=workload, gates=fixed)
    if net.config.experts and fixed is None:
        fixed = net.gates(hardware, workload, 1)
    shared = None if fixed is None else fixed[0]
    model = net.causal_lm().model
    layers = [
        (layer, {name: net.merged_projection(module, shared) for part in (layer.self_attn, layer.mlp)
                 for name, module in part.named_children() if name.endswith("_proj")})
        for layer in model.layers
    ]  # fmt: skip
    assert kv is not None
    cache[key] = _Prompt(logits[:, -1], [(layer.keys[0], layer.values[0]) for layer in kv.layers], layers)
    while len(cache) > PROMPT_CACHE:
        cache.popitem(last=False)
    return cache[key]


class PromptDecoder:
    """``rows`` continuations of ``prompt`` (token ids), fed one token per row per step.

    ``hardware`` (24,) and ``workload`` features are the prompt's (None where the network does not
    use them), ``gates`` (E,) overrides the router as in ``TensorGPTNetwork.forward``; ``steps``
    bounds how many tokens ``feed`` will be given.
    """

    @torch.no_grad()
    def __init__(
        self,
        net: TensorGPTNetwork,
        prompt: Sequence[int],
        hardware: torch.Tensor | None,
        workload: torch.Tensor | None,
        gates: torch.Tensor | None,
        rows: int,
        steps: int,
    ) -> None:
        shared = _run_prompt(net, prompt, hardware, workload, gates)
        lm = net.causal_lm()
        self._model = lm.model
        self._head = lm.lm_head
        self._layers = shared.layers
        self._prompt = shared.kv  # (heads, prefix + prompt, d) per layer
        heads, _, dim = self._prompt[0][0].shape
        self._heads, self._dim = heads, dim
        self._scale = dim**-0.5
        dtype = self._prompt[0][0].dtype
        self._keys = [torch.empty(rows, heads, steps, dim, dtype=dtype) for _ in self._layers]
        self._values = [torch.empty(rows, heads, steps, dim, dtype=dtype) for _ in self._layers]
        self.rows = rows
        self._slot = [0] * rows  # each row's buffer slot: rows with the same tokens so far share one
        self._slots = 1  # slots in use: 0 .. _slots - 1
        self._fed = 0
        self._position = len(prompt)  # RoPE position of the next token (the prefix takes none)
        self._last = shared.logits  # (1, V) after the prompt; final hidden states per slot once fed

    @torch.no_grad()
    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        """(rows, len(ids)) next-token logits of the vocabulary ids ``ids``."""
        if self._fed == 0:
            return self._last[:, ids].expand(self.rows, -1)
        bias = self._head.bias
        per_slot = F.linear(self._last, self._head.weight[ids], None if bias is None else bias[ids])
        return per_slot[torch.tensor(self._slot)]

    @torch.no_grad()
    def feed(self, tokens: Sequence[int]) -> None:
        """Append one token per row."""
        inputs, t = self._branch(tokens), self._fed  # one token per slot
        hidden = self._model.embed_tokens(torch.tensor(inputs))
        cos, sin = self._model.rotary_emb(hidden, torch.tensor([[self._position]]))
        shape = (len(inputs), self._heads, 1, self._dim)
        for i, (layer, weights) in enumerate(self._layers):
            x = layer.input_layernorm(hidden)
            q = F.linear(x, *weights["q_proj"]).view(shape)
            k = F.linear(x, *weights["k_proj"]).view(shape)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            self._keys[i][: len(inputs), :, t] = k[:, :, 0]
            self._values[i][: len(inputs), :, t] = F.linear(x, *weights["v_proj"]).view(shape)[:, :, 0]
            hidden = hidden + F.linear(self._attend(i, q[:, :, 0], t + 1), *weights["o_proj"])
            x = layer.post_attention_layernorm(hidden)
            gate = layer.mlp.act_fn(F.linear(x, *weights["gate_proj"]))
            hidden = hidden + F.linear(gate * F.linear(x, *weights["up_proj"]), *weights["down_proj"])
        self._last = self._model.norm(hidden)
        self._fed += 1
        self._position += 1

    def _branch(self, tokens: Sequence[int]) -> list[int]:
        """Move every row to the slot of its history extended by its token; the token of each slot.

        The first continuation of a history keeps its slot, each other one gets a new slot holding
        a copy of the history's keys and values, so slots stay 0 .. _slots - 1 with no gaps.
        """
        continuations: dict[tuple[int, int], int] = {}
        token_of: dict[int, int] = {}
        copies: list[tuple[int, int]] = []
        for row, token in enumerate(tokens):
            parent = self._slot[row]
            slot = continuations.get((parent, token))
            if slot is None:
                slot = parent if parent not in token_of else self._slots
                if slot != parent:
                    self._slots += 1
                    copies.append((parent, slot))
                continuations[(parent, token)] = slot
                token_of[slot] = token
            self._slot[row] = slot
        if copies and self._fed:
            sources, targets = (torch.tensor(side) for side in zip(*copies))
            for buffer in self._keys + self._values:
                buffer[targets, :, : self._fed] = buffer[sources, :, : self._fed]
        return [token_of[slot] for slot in range(self._slots)]

    def _attend(self, layer: int, q: torch.Tensor, length: int) -> torch.Tensor:
        """Attention of ``q`` (slots, heads, d) over the shared prompt and each slot's own tokens."""
        prompt_keys, prompt_values = self._prompt[layer]
        slots = q.shape[0]
        keys, values = self._keys[layer][:slots, :, :length], self._values[layer][:slots, :, :length]
        on_prompt = torch.matmul(q.transpose(0, 1), prompt_keys.transpose(1, 2)).transpose(0, 1)
        on_own = (keys * q[:, :, None]).sum(-1)  # a product-sum: batched (L, d) x (d, 1) products are slower
        weights = torch.softmax(torch.cat([on_prompt, on_own], dim=-1) * self._scale, dim=-1)
        split = prompt_keys.shape[1]
        out = torch.matmul(weights[..., :split].transpose(0, 1), prompt_values).transpose(0, 1)
        out = out + torch.matmul(weights[..., None, split:], values)[..., 0, :]
        return out.reshape(slots, -1)
