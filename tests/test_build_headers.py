"""What a kernel translation unit is compiled against (stitch_mcp.build.headers), and when
a failed build climbs to a fuller header. The compiles themselves are in test_check.py."""
from pathlib import Path

import pytest

from stitch_mcp.build.diagnostics import _failed_units
from stitch_mcp.build.headers import (
    binding_header_rungs,
    kernel_header_rungs,
    lacks_torch_declaration,
    per_operator_headers,
    uses_torch_namespace,
)
from stitch_mcp.build.host_headers import beyond_this_host, host_cuda_headers

torch = pytest.importorskip("torch")
from torch.utils.cpp_extension import include_paths  # noqa: E402

OPS = Path(include_paths()[0]) / "ATen" / "ops"

KERNEL = r"""
#include <torch/extension.h>
torch::Tensor f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    auto z = at::zeros({4}, x.options().dtype(torch::kFloat32));
    return y;
}
"""


def test_per_operator_header_declares_the_operators_the_source_calls():
    text = per_operator_headers([KERNEL], OPS)["torch/extension.h"]
    assert "#include <ATen/core/Tensor.h>" in text
    assert "#include <ATen/ops/empty_like.h>" in text and "#include <ATen/ops/zeros.h>" in text
    assert "ATen/ops/Tensor.h" not in text and "ATen/Dispatch.h" not in text
    assert "constexpr auto kFloat32 = at::kFloat;" in text and "using namespace at;" in text
    assert len([line for line in text.splitlines() if line.startswith("#include <ATen/ops/")]) == 2


def test_dispatch_macros_and_unqualified_operators_are_declared():
    src = "using namespace torch;\nTensor g(Tensor x) { AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), \"g\", [&]{});" \
          " return relu(x); }"
    text = per_operator_headers([src], OPS)["torch/types.h"]
    assert "#include <ATen/Dispatch.h>" in text and "#include <ATen/ops/relu.h>" in text


def test_operator_headers_are_copies_without_the_heavy_includes():
    files = per_operator_headers([KERNEL], OPS)
    real, copy = (OPS / "empty_like.h").read_text(), files["ATen/ops/empty_like.h"]
    assert "#include <ATen/DeviceGuard.h>" in real and "#include <ATen/Context.h>" in real
    assert "ATen/DeviceGuard.h" not in copy and "ATen/Context.h" not in copy and "ATen/TensorUtils.h" not in copy
    assert "#include <ATen/ops/empty_like_ops.h>" in copy and "inline at::Tensor empty_like(" in copy
    cuda_context = files["ATen/cuda/CUDAContext.h"]
    assert "#include <ATen/Context.h>" not in cuda_context and "#include <ATen/cuda/CUDAContextLight.h>" in cuda_context


@pytest.mark.parametrize("use, header", [
    ("const at::cuda::OptionalCUDAGuard guard(device_of(x));", "ATen/DeviceGuard.h"),
    ("auto gen = at::globalContext().defaultGenerator(x.device());", "ATen/Context.h"),
    ("at::TensorArg arg{x, \"x\", 1}; at::checkDim(\"f\", arg, 2);", "ATen/TensorUtils.h"),
])
def test_a_source_naming_what_a_dropped_header_declares_gets_it_back(use, header):
    files = per_operator_headers([KERNEL.replace("return y;", use + " return y;")], OPS)
    assert f"#include <{header}>" in files["torch/extension.h"]
    assert f"#include <{header}>" in files["ATen/ops/empty_like.h"]


def test_cuda_checks_from_aten_keep_the_real_cuda_context():
    files = per_operator_headers([KERNEL.replace("return y;", "AT_CUDA_CHECK(cudaGetLastError()); return y;")], OPS)
    assert "ATen/cuda/CUDAContext.h" not in files


def test_rungs_lightest_first(tmp_path):
    rungs = kernel_header_rungs(tmp_path, [KERNEL])
    assert [label for label, _ in rungs] == ["ATen per-operator", "torch/types.h", "torch/extension.h"]
    slim, types, full = (folder for _, folder in rungs)
    assert (slim / "torch" / "extension.h").read_text() == (slim / "torch" / "types.h").read_text()
    assert (slim / "ATen" / "ATen.h").is_file()
    assert (types / "torch" / "extension.h").read_text().count("#include <torch/types.h>") == 1
    assert full is None
    assert kernel_header_rungs(tmp_path, [KERNEL])[0][1] == slim  # named by content: written once


def test_sources_needing_more_start_higher(tmp_path):
    assert [r[0] for r in kernel_header_rungs(tmp_path, ["#include <torch/torch.h>\n"])] == ["torch/extension.h"]
    assert [r[0] for r in kernel_header_rungs(tmp_path, ["namespace py = pybind11;"])] == ["torch/extension.h"]
    grad = "auto y = torch::zeros({3}, torch::TensorOptions().requires_grad(true));"
    assert [r[0] for r in kernel_header_rungs(tmp_path, [grad])] == ["torch/types.h", "torch/extension.h"]


def test_using_namespace_torch_starts_where_torchs_own_overloads_are(tmp_path):
    """With `using namespace torch;` an unqualified `empty_like(x)` is ambiguous (torch's factory and
    ATen's) with torch's headers, and compiled on the per-operator rung, which lacks torch's: the
    full wrapper-corpus comparison found it (tests/programs/wrappers/unary_ops_unqualified.cu)."""
    for using in ("using namespace torch;", "using namespace ::torch ;"):
        assert [r[0] for r in kernel_header_rungs(tmp_path, [using + "\n" + KERNEL])] == \
            ["torch/types.h", "torch/extension.h"]
        assert [r[0] for r in binding_header_rungs(tmp_path, [using])] == ["torch/extension.h"]
    for other in ("using namespace torch::indexing;", "using namespace at;", "using torch::Tensor;"):
        assert kernel_header_rungs(tmp_path, [other + "\n" + KERNEL])[0][0] == "ATen per-operator"
        assert binding_header_rungs(tmp_path, [other])[0][0] == "ATen per-operator"


@pytest.mark.parametrize("output, climbs", [
    ('cuda.cu(9): error: identifier "zero_value" is undefined', False),  # the candidate's own name
    ('cuda.cu(5): error: namespace "torch" has no member "get_num_threads"', True),
    ('cuda.cu(7): error: identifier "AT_DISPATCH_FLOATING_TYPES" is undefined', True),
    ('cuda.cu(7): error: identifier "empty_strided" is undefined', True),  # an ATen operator
    ("cuda.cu:4:20: error: \u2018cat\u2019 is not a member of \u2018torch\u2019", True),  # gcc's quotes
    ('cuda.cu(3): error: expected a ";"', False),
])
def test_only_a_missing_torch_declaration_climbs(output, climbs):
    assert lacks_torch_declaration(output) is climbs


def test_binding_rungs(tmp_path):
    decl = "torch::Tensor relu_forward(torch::Tensor x);"
    (label, folder), full = binding_header_rungs(tmp_path, [decl])
    assert label == "ATen per-operator" and full == ("torch/extension.h", None)
    text = (folder / "torch" / "extension.h").read_text()
    assert "torch/csrc/utils/pybind.h" in text and "torch/csrc/Exceptions.h" in text  # casters, wrap_pybind_function
    frontend = "#include <torch/extension.h>\ntorch::nn::Linear make();"
    assert binding_header_rungs(tmp_path, [frontend]) == [full]


def test_ninja_failures_are_told_apart_by_unit():
    log = ("[1/3] c++ -c main.cpp -o main.o\nFAILED: [code=1] main.o\nc++ -c main.cpp\n"
           "main.cpp:2:8: error: 'foo' is not a member of 'torch'\n"
           "[2/3] nvcc -c cuda.cu\nFAILED: [code=2] cuda.cuda.o\nnvcc -c cuda.cu\n"
           "cuda.cu(9): error: identifier \"zero_value\" is undefined\nninja: build stopped: subcommand failed.\n")
    units = _failed_units(log)
    assert "foo" in units["binding"] and "zero_value" not in units["binding"]
    assert "zero_value" in units["kernel"] and "foo" not in units["kernel"]
    assert _failed_units("undefined reference to `bar'") == {"binding": "undefined reference to `bar'",
                                                             "kernel": "undefined reference to `bar'"}


# ------------------------------------------------------------------ what climbs (issue 15: no false compile errors)

NVCC_DIVIDE = ('cuda.cu(12): error: no operator "/" matches these operands\n'
               '            operand types are: at::Tensor / float\n'
               '      return out / (float)n;\n'
               '                 ^\n\n1 error detected in the compilation of "cuda.cu".\n')


@pytest.mark.parametrize("output", [
    NVCC_DIVIDE,
    "main.cpp:12:15: error: no match for \u2018operator/\u2019 (operand types are \u2018at::Tensor\u2019 and \u2018float\u2019)",
    'cuda.cu(7): error: class "at::Tensor" has no member "index_select"',
    'cuda.cu(5): error: incomplete type "c10::cuda::CUDAGuard" is not allowed',
    'cuda.cu(8): error: no instance of overloaded function "at::Tensor::to" matches the argument list\n'
    '            argument types are: (c10::ScalarType)',
    "main.cpp:4:5: error: \u2018Tensor\u2019 does not name a type",
    'cuda.cu(9): error: no suitable conversion function from "at::Tensor" to "float" exists',
    "/x/site-packages/torch/include/ATen/ops/sum.h(20): error: identifier \"DeviceGuard\" is undefined",
])
def test_a_failure_that_a_missing_torch_declaration_can_cause_climbs(output):
    assert lacks_torch_declaration(output) is True


@pytest.mark.parametrize("output", [
    # the candidate's own name, echoed on a source line that names torch: still its own typo
    'cuda.cu(9): error: identifier "totl" is undefined\n      k<<<(totl + 255) / 256, 256>>>(torch::empty_like(x));\n'
    '           ^\n',
    'cuda.cu(3): error: expected a ";"',
    "main.cpp:3:20: error: expected \u2018;\u2019 before \u2018}\u2019 token",
    'cuda.cu(20): error: identifier "cublasSgemv" is undefined',  # a CUDA library's name: the same on every rung
    'cuda.cu(6): error: argument of type "int *" is incompatible with parameter of type "float *"',
])
def test_an_error_of_the_candidates_own_does_not_climb(output):
    assert lacks_torch_declaration(output, using_torch=False) is False


@pytest.mark.parametrize("output", [
    "main.cpp:6:9: error: ‘parallel_for’ is not a member of ‘at’",  # the corpus's cpp_parallel_for
    'cuda.cu(6): error: namespace "at" has no member "parallel_for"',
    "main.cpp:6:9: error: ‘c10’ has not been declared",
])
def test_a_qualified_torch_name_climbs_without_using_namespace(output):
    assert lacks_torch_declaration(output, using_torch=False) is True


def test_unqualified_names_are_looked_up_in_torch_only_under_using_namespace():
    out = 'cuda.cu(9): error: identifier "parallel_for" is undefined'
    assert lacks_torch_declaration(out, using_torch=True) is True  # at::parallel_for, brought in by `using`
    assert lacks_torch_declaration(out, using_torch=False) is False
    assert lacks_torch_declaration('cuda.cu(9): error: identifier "zero_vlaue" is undefined', using_torch=True) is False
    assert uses_torch_namespace(["using namespace torch;\n"]) and not uses_torch_namespace(["namespace py = x;"])


def test_tensor_operators_are_on_the_first_rung():
    """`out / (float)n`, `a + b`, `x > 0`: ATen/TensorOperators.h's per-operator branch (empty_like
    only) is part of the light header, so the commonest wrapper arithmetic needs no climb."""
    files = per_operator_headers(["torch::Tensor f(torch::Tensor x) { return x / 2.f; }"], OPS)
    assert "#include <ATen/TensorOperators.h>" in files["torch/extension.h"]
    ops = files["ATen/TensorOperators.h"]
    assert "AT_PER_OPERATOR_HEADERS" not in ops and "ATen/Functions.h" not in ops
    assert "#include <ATen/ops/empty_like.h>" in ops and "ATen/ops/empty_like.h" in files


# ------------------------------------------------------------------ the CPU path's CUDA headers (issue 15 item 6)


def test_host_cuda_headers_supply_what_this_host_lacks(tmp_path):
    host = host_cuda_headers(tmp_path)
    torch_include = Path(include_paths()[0])
    standins = [Path(f) for f in host.flags if f.startswith(str(tmp_path))]
    assert len(standins) <= 1 and all(torch_include not in p.parents for p in map(Path, host.flags[1::2]))
    for rel in ("c10/cuda/impl/cuda_cmake_macros.h", "ATen/cuda/CUDAConfig.h"):
        if not (torch_include / rel).is_file():  # a CPU build of torch
            assert "#define" in (standins[0] / rel).read_text()
    for header in ("cusparse.h", "cublas_v2.h", "cublasLt.h", "cusolverDn.h", "cusolver_common.h"):
        assert (header in host.stood_in) == bool(standins and (standins[0] / header).is_file())
    assert host_cuda_headers(tmp_path) == host  # named by content: the same folder again


@pytest.mark.parametrize("output, stood_in, lacks", [
    ("cuda.cu:3:10: fatal error: cublas_v2.h: No such file or directory", [], ["cublas_v2.h"]),
    ('cuda.cu(20): error: identifier "cublasSgemv" is undefined\n'
     'cuda.cu(20): error: identifier "CUBLAS_OP_N" is undefined', ["cublas_v2.h"], ["CUBLAS_OP_N", "cublasSgemv"]),
    ('cuda.cu(20): error: identifier "cublasSgemv" is undefined\ncuda.cu(9): error: identifier "totl" is undefined',
     ["cublas_v2.h"], []),  # and an error of its own: that is what it is told
    ("cuda.cu:3:10: fatal error: my_kernels.h: No such file or directory", [], []),
    ('cuda.cu(9): error: identifier "totl" is undefined', ["cublas_v2.h"], []),
])
def test_what_stops_a_cpu_check_that_a_gpu_machine_has(output, stood_in, lacks):
    assert beyond_this_host(output, stood_in) == lacks
