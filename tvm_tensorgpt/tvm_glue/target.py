"""Targets as TVM 0.27 wants them: JSON dicts. Also ``host`` detection and a helpful error for the
old CLI string form (``llvm -mcpu=...``), which TVM no longer parses."""

from __future__ import annotations

import difflib
import functools
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
    """A ``tvm.target.Target`` from a Target, a dict, a JSON string or ``"host"``, checked for what
    TVM accepts silently but fails on later (``check_target``)."""
    if isinstance(spec, Target):
        return spec
    if isinstance(spec, dict):
        if spec.get("kind") == "cuda" and not spec.get("arch") and not spec.get("tag"):
            raise TargetError('a CUDA target needs its "arch", e.g. {"kind": "cuda", "arch": "sm_87"} (TVM would '
                              'quietly assume sm_50), or a tag such as "nvidia/jetson-agx-orin-64gb"')  # fmt: skip
        return check_target(_make(spec, json.dumps(spec)))
    if not isinstance(spec, str):
        raise TargetError(f"a target is a JSON dict, a JSON string, a TVM tag or 'host', not {type(spec).__name__}")
    text = spec.strip()
    if text == "host":
        return Target(host_target())
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise TargetError(f"target {text!r} is not valid JSON: {err}") from None
        return parse_target(data)
    if " -" in text or text in ("llvm", "cuda", "c"):
        suggestion = json.dumps(_cli_to_dict(text))
        raise TargetError(
            f"target {text!r} is in the CLI string form, which TVM 0.27 no longer parses. "
            f"Write it as a JSON dict instead, e.g. '{suggestion}', or use 'host'."
        )
    return check_target(_make(text, text))  # a registered tag such as "nvidia/geforce-rtx-4090"


def _make(spec: dict | str, shown: str) -> Target:
    try:
        return Target(spec)
    except Exception as err:  # noqa: BLE001 - TVM raises several error types here
        reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise TargetError(
            f"cannot make a target from {shown} ({reason}). Use a JSON dict such as "
            '\'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}\', a TVM target tag, or "host".'
        ) from None


@functools.lru_cache(maxsize=1)
def llvm_cpus() -> tuple[str, ...]:
    """The CPU names this LLVM knows (for ``mcpu``)."""
    from tvm.target import codegen

    return tuple(sorted(str(c) for c in codegen.llvm_get_cpu_archlist(Target({"kind": "llvm"}))))


def check_target(target: Target) -> Target:
    """Refuse what TVM takes without a word and fails on later: an mcpu LLVM does not know (it
    silently compiles for a generic CPU), num-cores below 1. (A CUDA dict without an arch is refused
    before TVM fills in sm_50, in ``parse_target``.)"""
    data: dict[str, Any] = json.loads(str(target))
    kind = target.kind.name
    if kind == "llvm" and data.get("mcpu") and data["mcpu"] not in llvm_cpus() and not data.get("mtriple"):
        close = difflib.get_close_matches(str(data["mcpu"]), llvm_cpus(), n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise TargetError(f"LLVM does not know mcpu {data['mcpu']!r}: {hint}e.g. znver3, core-avx2, skylake-avx512, "
                          "or omit it ('host' detects this CPU)")  # fmt: skip
    cores = data.get("num-cores")
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise TargetError(f"num-cores must be a whole number >= 1, not {cores!r}")
    return target
