"""CUDA validity on this CPU-only machine: VerifyGPUCode, then TVM's codegen and nvcc."""

import numpy as np
import pytest
import tvm
from conftest import make_context

from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import Sketch
from tvm_tensorgpt.plugin import cuda
from tvm_tensorgpt.plugin.generator import PriorGenerator
from tvm_tensorgpt.plugin.intrinsics import load_tensor_intrinsics
from tvm_tensorgpt.workloads import get_workload


def _orin_matmul():
    target = tvm.target.Target(get_profile("jetson-orin").target)
    load_tensor_intrinsics(target)
    context = make_context(get_workload("matmul-128").build(), target)
    sketches = [Sketch.from_schedule(context.mod, s) for s in context.generate_design_space()]
    generator = PriorGenerator()
    generator.prepare(target)
    return context, sketches, generator.generate(sketches, 4, np.random.default_rng(0))


def test_generated_cuda_schedule_compiles_with_nvcc():
    problem = cuda.nvcc_problem("sm_87")
    if problem:
        pytest.skip(problem)
    context, sketches, proposals = _orin_matmul()
    counts = cuda.check_candidates(context, sketches, proposals, compile_limit=1)
    assert counts.generated == 4 and counts.verified >= 1
    assert counts.compile_tried == 1 and counts.compiled == 1 and counts.nvcc is None


def test_without_nvcc_validity_stops_at_verify_gpu_code(monkeypatch):
    monkeypatch.setattr(cuda, "find_nvcc", lambda: None)
    assert "nvcc not found" in cuda.nvcc_problem("sm_87") and "VerifyGPUCode" in cuda.nvcc_problem("sm_87")
    context, sketches, proposals = _orin_matmul()
    counts = cuda.check_candidates(context, sketches, proposals, compile_limit=2)
    assert counts.verified >= 1 and counts.compiled is None and counts.compile_tried == 0
    assert "nvcc not found" in counts.nvcc and counts.share("compiled") is None


def test_nvcc_that_cannot_target_the_arch_says_so():
    if cuda.find_nvcc() is None:
        pytest.skip("nvcc not found")
    assert "cannot target sm_10" in cuda.nvcc_problem("sm_10")
