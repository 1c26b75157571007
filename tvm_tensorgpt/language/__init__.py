"""The schedule language: MetaSchedule design spaces as prompts, their decisions as responses."""

from .codec import DecodeError, decode_response, prompt_tokens, response_tokens
from .constraints import (
    ContextFilter,
    DecisionFilter,
    DecodeContext,
    DecodingState,
    Filter,
    is_modelled,
    legal_values,
)
from .design import design_context, design_sketches
from .limits import ThreadLimitFilter, device_filters
from .sketch import Decision, DecisionSlot, Realised, Sketch
from .vocab import VOCAB, Vocabulary

__all__ = [
    "VOCAB",
    "ContextFilter",
    "Decision",
    "DecisionFilter",
    "DecisionSlot",
    "DecodeContext",
    "DecodeError",
    "DecodingState",
    "Filter",
    "Realised",
    "Sketch",
    "ThreadLimitFilter",
    "Vocabulary",
    "decode_response",
    "design_context",
    "design_sketches",
    "device_filters",
    "is_modelled",
    "legal_values",
    "prompt_tokens",
    "response_tokens",
]
