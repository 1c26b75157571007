"""The schedule language: MetaSchedule design spaces as prompts, their decisions as responses."""

from .codec import DecodeError, decode_response, prompt_tokens, response_tokens
from .constraints import DecisionFilter, DecodingState, is_modelled, legal_values
from .sketch import Decision, DecisionSlot, Sketch
from .vocab import VOCAB, Vocabulary

__all__ = [
    "VOCAB",
    "Decision",
    "DecisionFilter",
    "DecisionSlot",
    "DecodeError",
    "DecodingState",
    "Sketch",
    "Vocabulary",
    "decode_response",
    "is_modelled",
    "legal_values",
    "prompt_tokens",
    "response_tokens",
]
