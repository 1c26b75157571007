"""Prompt and response of the schedule language.

prompt   = <bos> [HW] hardware tokens  [WL] workload blocks  [SK] sketch instructions  <sep>
response = one group of tokens per decision slot, in trace order, then <eos>

The sketch part lists every instruction of the design space by kind, with the random variables it
reads (numbered in order of definition, as TVM prints them: b0, b1, l2, ...), so design spaces that
differ only in where a block is attached get different prompts; a sampling instruction shows
what bounds its decision (tile: extent, parts, innermost limit; categorical: its candidates;
location: how many are legal) followed by ``<mask>`` where the decision was. The response holds
exactly those masked decisions: tile factors as numbers ``N<v>``, categorical indices ``C<i>``,
compute locations ``L<i>``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .sketch import CATEGORICAL, LOCATION, OPAQUE, TILE, Decision, Sketch
from .vocab import VOCAB, Vocabulary


class DecodeError(ValueError):
    """A response does not fit its sketch."""


def workload_tokens(sketch: Sketch, vocab: Vocabulary = VOCAB) -> list[str]:
    out = ["[WL]"]
    for block in sketch.blocks:
        out += ["[BLK]", *vocab.words(block.name), "[IT]"]
        for kind, extent in block.iters:
            out += [f"K_{kind}", vocab.number(extent) if extent >= 0 else "<unk_num>"]
        out += ["[DT]", *(vocab.dtype(d) for d in block.dtypes)]
    return out


def sketch_tokens(sketch: Sketch, vocab: Vocabulary = VOCAB) -> list[str]:
    out = ["[SK]"]
    slots = iter(sketch.slots)
    for name, attrs, reads in sketch.instructions:
        out.append(vocab.instruction(name))
        if attrs:
            out.append(vocab.annotation(attrs[0]))
        out += [vocab.number(index) for index in reads]
        if not name.startswith("Sample"):
            continue
        slot = next(slots)
        if slot.kind == TILE:
            extent = vocab.number(slot.extent) if slot.extent is not None else "<unk_num>"
            out += [extent, vocab.number(slot.parts), vocab.number(slot.max_innermost)]
        elif slot.kind == CATEGORICAL:
            out += [vocab.number(c) for c in slot.choices]
        elif slot.kind == LOCATION:
            out.append(vocab.number(len(slot.choices)))
        out.append("<mask>")
    return out


def prompt_tokens(
    sketch: Sketch, hardware: Sequence[str] = (), vocab: Vocabulary = VOCAB
) -> list[str]:
    """The prompt for ``sketch``; ``hardware`` are the hardware-channel tokens (bucket, target)."""
    return ["<bos>", "[HW]", *hardware, *workload_tokens(sketch, vocab), *sketch_tokens(sketch, vocab), "<sep>"]


def decision_tokens(slot_kind: str, decision: Decision, vocab: Vocabulary = VOCAB) -> list[str]:
    """Tokens of one known decision (tile factors, categorical index or location)."""
    if slot_kind in (TILE, OPAQUE):
        return [vocab.number(v) for v in decision]  # type: ignore[union-attr]
    if slot_kind == CATEGORICAL:
        return [vocab.categorical(int(decision))]  # type: ignore[arg-type]
    return [vocab.location(int(decision))]  # type: ignore[arg-type]


def response_tokens(
    sketch: Sketch, decisions: Sequence[Decision], vocab: Vocabulary = VOCAB
) -> list[str]:
    if len(decisions) != len(sketch.slots):
        raise ValueError(f"{len(decisions)} decisions for {len(sketch.slots)} slots")
    out: list[str] = []
    for slot, decision in zip(sketch.slots, decisions):
        if decision is None:
            out += ["<unk>"] * slot.num_tokens
        else:
            out += decision_tokens(slot.kind, decision, vocab)
    return out + ["<eos>"]


def _token_value(token: str, prefix: str) -> int | None:
    if token.startswith(prefix) and token[len(prefix):].lstrip("-").isdigit():
        return int(token[len(prefix):])
    return None


def decode_response(sketch: Sketch, tokens: Sequence[str]) -> list[Decision]:
    """Decisions from response tokens; ``<unk>`` gives None (TVM samples that slot)."""
    body = list(tokens)
    if body and body[-1] == "<eos>":
        body.pop()
    expected = sum(slot.num_tokens for slot in sketch.slots)
    if len(body) != expected:
        raise DecodeError(f"response has {len(body)} decision tokens, the sketch needs {expected}")
    out: list[Decision] = []
    pos = 0
    for slot in sketch.slots:
        group = body[pos : pos + slot.num_tokens]
        pos += slot.num_tokens
        if "<unk>" in group or "<unk_num>" in group:
            out.append(None)
            continue
        prefix = {TILE: "N", OPAQUE: "N", CATEGORICAL: "C", LOCATION: "L"}[slot.kind]
        values = [_token_value(t, prefix) for t in group]
        if any(v is None for v in values):
            raise DecodeError(f"tokens {group} do not fit a {slot.kind} slot")
        out.append(tuple(values) if slot.kind in (TILE, OPAQUE) else values[0])  # type: ignore[arg-type]
    return out
