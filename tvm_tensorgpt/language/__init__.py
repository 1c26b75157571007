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
from .limits import ThreadLimitFilter, device_filters
from .sketch import TVM_ERRORS, Decision, DecisionSlot, Sketch
from .vocab import VOCAB, Vocabulary

__all__ = [
    "TVM_ERRORS",
    "VOCAB",
    "ContextFilter",
    "Decision",
    "DecisionFilter",
    "DecisionSlot",
    "DecodeContext",
    "DecodeError",
    "DecodingState",
    "Filter",
    "Sketch",
    "ThreadLimitFilter",
    "Vocabulary",
    "decode_response",
    "device_filters",
    "is_modelled",
    "legal_values",
    "prompt_tokens",
    "response_tokens",
]
