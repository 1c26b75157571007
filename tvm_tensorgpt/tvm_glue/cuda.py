"""Compiling CUDA without a GPU: TVM's CUDA code generation, then nvcc for the device's arch.

nvcc is optional: where it is missing, or too new for the arch (CUDA 13 dropped sm_72, the Jetson
Xavier), ``nvcc_problem`` says why and validity stops at VerifyGPUCode.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import traceback
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import tvm
from tvm.s_tir import Schedule
from tvm.target import Target


def find_nvcc() -> str | None:
    """nvcc on PATH, else TVM's default CUDA location (/usr/local/cuda)."""
    found = shutil.which("nvcc")
    if found is None and Path("/usr/local/cuda/bin/nvcc").exists():
        found = "/usr/local/cuda/bin/nvcc"
    return found


@lru_cache(maxsize=4)
def _nvcc_arches(nvcc: str) -> frozenset[str]:
    out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60, check=False)
    return frozenset(a.replace("compute_", "sm_") for a in out.stdout.split())


def nvcc_problem(arch: str) -> str | None:
    """Why nvcc cannot compile for ``arch`` here (None when it can)."""
    nvcc = find_nvcc()
    if nvcc is None:
        return "nvcc not found (not on PATH, no /usr/local/cuda): validity stops at VerifyGPUCode"
    arches = _nvcc_arches(nvcc)
    if arch not in arches:
        return (f"{nvcc} cannot target {arch} (it knows {', '.join(sorted(arches))}): validity stops at "
                "VerifyGPUCode")  # fmt: skip
    return None


@contextlib.contextmanager
def _nvcc_on_path() -> Iterator[None]:
    """TVM calls ``nvcc`` by name; make the one ``find_nvcc`` found callable for the duration."""
    nvcc = find_nvcc()
    if nvcc is None or shutil.which("nvcc"):
        yield
        return
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{Path(nvcc).parent}{os.pathsep}{old}"
    try:
        yield
    finally:
        os.environ["PATH"] = old


def compile_cuda(sch: Schedule, target: Target) -> bytes:
    """CUDA source by TVM's codegen, compiled to a cubin by nvcc for the target's arch."""
    from tvm.support.nvcc import compile_cuda as nvcc_compile

    data = json.loads(str(target))
    arch = str(data["arch"])
    host = Target({**{k: v for k, v in data.items() if k != "host"}, "host": {"kind": "llvm"}})
    module = tvm.compile(sch.mod, target=host).mod
    sources = [m.inspect_source() for m in module.imports if m.kind == "cuda"]
    if not sources:
        raise RuntimeError("TVM produced no CUDA module for this schedule")
    with _nvcc_on_path(), target:
        return bytes(nvcc_compile(sources[0], target_format="cubin", arch=arch, compiler="nvcc"))


def compile_error(err: Exception, lines: int = 3) -> str:
    """Why a verified candidate did not compile, short enough to list: nvcc's first ``lines`` lines
    that say "error" (TVM's error carries the whole CUDA source before them), or, when TVM's own
    build failed first, its message and the C++ frame that raised it."""
    text = str(err)
    if "Compilation error:" in text:
        said = [line.strip() for line in text.rsplit("Compilation error:", 1)[-1].splitlines() if line.strip()]
        return "nvcc: " + " | ".join([line for line in said if "error" in line.lower()][:lines] or said[-1:])
    message = text.strip().splitlines()[0] if text.strip() else "(no message)"
    native = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.endswith((".cc", ".h"))]
    if not native:
        return f"TVM build ({type(err).__name__}): {message}"
    frame = native[-1]
    function = re.search(r"[\w:~]+\(.*\)", frame.name)  # drop the return type C++ frames start with
    where = f"{'/'.join(Path(frame.filename).parts[-2:])}:{frame.lineno} in {function[0] if function else frame.name}"
    return f"TVM build ({type(err).__name__} at {where}): {message}"
