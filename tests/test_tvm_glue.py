"""The TVM glue layer: JSON targets and their errors, the nvcc compile check."""

import json

import pytest
import tvm

from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.tvm_glue import (
    TargetError,
    cuda,
    host_target,
    parse_target,
)


def test_cli_string_targets_get_a_json_suggestion():
    with pytest.raises(TargetError) as err:
        parse_target("llvm -mcpu=znver3 -num-cores=2")
    message = str(err.value)
    assert "no longer parses" in message
    assert json.dumps({"kind": "llvm", "mcpu": "znver3", "num-cores": 2}) in message


def test_targets_from_json_dict_and_host():
    assert parse_target('{"kind": "llvm", "num-cores": 2}').kind.name == "llvm"
    assert parse_target({"kind": "llvm"}).kind.name == "llvm"
    host = host_target()
    assert host["kind"] == "llvm" and host["num-cores"] >= 1 and host["mcpu"]
    with pytest.raises(TargetError, match="not valid JSON"):
        parse_target('{"kind": llvm}')


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


def test_nvcc_that_cannot_target_the_arch_says_so():
    if cuda.find_nvcc() is None:
        pytest.skip("nvcc not found")
    assert "cannot target sm_10" in cuda.nvcc_problem("sm_10")
