"""Targets as TVM 0.27 wants them: JSON dicts. Also ``host`` detection and a helpful error for the
old CLI string form (``llvm -mcpu=...``), which TVM no longer parses."""

from __future__ import annotations

import json
import shlex
from typing import Any, Union

import psutil
from tvm.target import Target

TargetLike = Union[Target, dict, str]


class TargetError(ValueError):
    """A target this package cannot use; the message says how to write one it can."""


def host_target(num_cores: int | None = None) -> dict[str, Any]:
    """The JSON target of this machine: LLVM's host CPU name and its physical core count."""
    from tvm.target import codegen

    cores = num_cores or psutil.cpu_count(logical=False) or 1
    return {"kind": "llvm", "mcpu": str(codegen.llvm_get_system_cpu()), "num-cores": int(cores)}


def _cli_to_dict(text: str) -> dict[str, Any]:
    """Best-effort translation of ``llvm -mcpu=x -num-cores=2`` for the error message."""
    words = shlex.split(text)
    out: dict[str, Any] = {"kind": words[0]}
    for word in words[1:]:
        key, _, value = word.lstrip("-").partition("=")
        out[key] = int(value) if value.isdigit() else (value.split(",") if "," in value else value or True)
    return out


def parse_target(spec: TargetLike) -> Target:
    """A ``tvm.target.Target`` from a Target, a dict, a JSON string or ``"host"``."""
    if isinstance(spec, Target):
        return spec
    if isinstance(spec, dict):
        return Target(spec)
    text = spec.strip()
    if text == "host":
        return Target(host_target())
    if text.startswith("{"):
        try:
            return Target(json.loads(text))
        except json.JSONDecodeError as err:
            raise TargetError(f"target {text!r} is not valid JSON: {err}") from None
    if " -" in text or text in ("llvm", "cuda", "c"):
        suggestion = json.dumps(_cli_to_dict(text))
        raise TargetError(
            f"target {text!r} is in the CLI string form, which TVM 0.27 no longer parses. "
            f"Write it as a JSON dict instead, e.g. '{suggestion}', or use 'host'."
        )
    try:
        return Target(text)  # a registered tag such as "nvidia/geforce-rtx-4090"
    except Exception as err:  # noqa: BLE001 - TVM raises several error types here
        raise TargetError(
            f"cannot make a target from {text!r} ({err}). Use a JSON dict such as "
            '\'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}\', a TVM target tag, or "host".'
        ) from None
