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


def test_compile_errors_are_kept_short_and_say_where():
    """A refused candidate keeps what nvcc said (not the kernel TVM puts before it in the error), or,
    when TVM's build fails first, TVM's check and the C++ line that raised it."""
    try:
        tvm.tirx.const(1, "int32") // tvm.tirx.const(0, "int32")
    except tvm.error.InternalError as err:
        said = cuda.compile_error(err)
    assert said.startswith("TVM build (InternalError at ") and "const_fold.h:" in said and "Divide by zero" in said
    problem = cuda.nvcc_problem("sm_87")
    if problem:
        pytest.skip(problem)
    from tvm.support.nvcc import compile_cuda

    source = "extern \"C\" __global__ void kernel_source_line(float* a) { a[0] = undeclared_name; }"
    target = tvm.target.Target(get_profile("jetson-orin").target)
    with cuda._nvcc_on_path(), target, pytest.raises(RuntimeError) as raised:
        compile_cuda(source, target_format="cubin", arch="sm_87", compiler="nvcc")
    said = cuda.compile_error(raised.value)
    assert said.startswith("nvcc: ") and "undeclared_name" in said and "kernel_source_line" not in said


def test_without_nvcc_validity_stops_at_verify_gpu_code(monkeypatch):
    monkeypatch.setattr(cuda, "find_nvcc", lambda: None)
    assert "nvcc not found" in cuda.nvcc_problem("sm_87") and "VerifyGPUCode" in cuda.nvcc_problem("sm_87")
    context, sketches, proposals = _orin_matmul()
    counts = cuda.check_candidates(context, sketches, proposals, compile_limit=2)
    assert counts.verified >= 1 and counts.compiled is None and counts.compile_tried == 0
    assert "nvcc not found" in counts.nvcc


def test_nvcc_that_cannot_target_the_arch_says_so():
    if cuda.find_nvcc() is None:
        pytest.skip("nvcc not found")
    assert "cannot target sm_10" in cuda.nvcc_problem("sm_10")


def test_gpu_validity_labels_train_a_gpu_expert(tmp_path):
    """`data validity` labels unmasked CUDA candidates of training tasks with VerifyGPUCode for a
    source GPU (resumable, never the held-out Orin nor a CPU); the verified ones are weight-1
    examples, and `train --stage experts --validity-dir` gives that GPU an expert of its own."""
    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.cli import main
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, read_config
    from tvm_tensorgpt.train.validity import _labelled, validity_examples

    labels = tmp_path / "validity"
    argv = ["data", "validity", "--profile", "rtx4090", "--per-task", "6", "--tasks", "12", "--out", str(labels)]
    assert main(argv) == 0
    rows = _labelled(labels / "rtx4090.jsonl.gz")
    assert len(rows) == 72 and 0 < sum(r["verified"] for r in rows) < 72
    assert main(argv) == 0 and len(_labelled(labels / "rtx4090.jsonl.gz")) == 72  # resumed: nothing twice
    assert main(argv[:3] + ["jetson-orin"] + argv[4:]) == 2
    assert main(argv[:3] + ["host-avx2-1c"] + argv[4:]) == 2

    data = tmp_path / "records"
    ms.tune_tir(get_workload("matmul-128").build(), get_profile("host-sse42-1c").target, str(data / "host-sse42-1c"),
                max_trials_global=8, num_trials_per_iter=8, strategy="replay-trace", builder="tensorgpt",
                num_tuning_cores=1)  # fmt: skip
    base, experts = tmp_path / "base", tmp_path / "experts"
    tiny = ["--data-dir", str(data), "--epochs", "1", "--batch", "4", "--hidden", "32", "--layers", "1"]
    assert main(["train", "--out", str(base), *tiny]) == 0
    examples = validity_examples(labels / "rtx4090.jsonl.gz", read_config(base), universe_standardizer())
    assert examples and all(e.weight == 1.0 and e.hardware is not None for e in examples)
    assert main(["train", "--stage", "experts", "--base", str(base), "--out", str(experts),
                 "--validity-dir", str(labels), *tiny]) == 0  # fmt: skip
    assert load_checkpoint(experts)[0].config.experts == ("host-sse42-1c", "rtx4090")
    assert main(["train", "--stage", "experts", "--base", str(base), "--out", str(tmp_path / "x"),
                 "--validity-dir", str(tmp_path), *tiny]) == 2  # fmt: skip
