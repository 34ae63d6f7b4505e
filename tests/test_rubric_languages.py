"""The rubric on code written in other styles: tensor-core and async-copy code in every spelling,
kernel names behind attributes and templates, kernels in Triton / CuTe DSL / TileLang /
ThunderKittens / CuPy / NVRTC (cuda-python) / jiterator, and plan caches versus output caches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stitch_mcp.analysis import analyze_candidate, kernel_names
from stitch_mcp.config import configure
from stitch_mcp.score import rubric_score
from stitch_mcp.store import get_workspace

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent
ADD_REF = (CASES / "add_reference.py").read_text()
MM_REF = (CASES / "matmul_reference.py").read_text()


def wrap(cuda: str) -> str:
    """A candidate whose forward calls an extension built from `cuda`."""
    return ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
            f'src = r"""{cuda}"""\n'
            'ext = load_inline(name="e", cpp_sources="torch::Tensor run(torch::Tensor a, torch::Tensor b);", '
            'cuda_sources=src, functions=["run"])\n\n'
            "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return ext.run(a, b)\n")


def codes(a) -> set[str]:
    return {f.code for f in a.findings}


# ----------------------------------------------------------------------------- kernel names


@pytest.mark.parametrize("decl, name", [
    ("__global__ void __cluster_dims__(8, 1, 1) softmax_cluster_kernel(const float* x, float* y, int n)",
     "softmax_cluster_kernel"),
    ("__global__ void __launch_bounds__(256, 2) gemm_kernel(const float* a)", "gemm_kernel"),
    ("__global__ __launch_bounds__(128) void lb_first(const float* a)", "lb_first"),
    ("template <int BLOCK, typename T>\n__global__ void tiled(const T* a)", "tiled"),
    ('extern "C" __global__ void c_linkage(const float* a)', "c_linkage"),
    ("template <> __global__ void specialised<float>(const float* a)", "specialised"),
    ("__global__ void __attribute__((noinline)) attributed(const float* a)", "attributed"),
    ("__global__ void\n__maxnreg__(64)\nnext_line(const float* a)", "next_line"),
])
def test_kernel_names_behind_attributes_and_templates(decl, name):
    cuda = decl + " { }\n"
    assert kernel_names(cuda) == [name]  # a .cu text
    assert kernel_names(wrap(cuda)) == [name]  # inside a candidate
    assert analyze_candidate(wrap(cuda), ADD_REF).kernels == [name]


# ----------------------------------------------------------------------------- tensor cores and async copies

MMA_PTX = r'''
#include <cuda_fp16.h>
#define CP_ASYNC_CG(dst, src) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src))
#define CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group %0;\n" :: "n"(n))
__device__ __forceinline__ void mma_16816(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__global__ void gemm(const half* A, const half* B, float* C) {
    __shared__ half sa[2][128 * 32];
    for (int k = 0; k < 8; ++k) {
        CP_ASYNC_CG(0, A + k);
        CP_ASYNC_WAIT(0);
        __syncthreads();
    }
}
'''

ASYNC_SPELLINGS = {
    "memcpy_async": "#include <cuda/pipeline>\n__global__ void k(const float* a) {\n  __shared__ float s[256];\n"
                    "  auto pipe = cuda::make_pipeline();\n  cuda::memcpy_async(s, a, sizeof(s), pipe);\n}\n",
    "cp.async.bulk (TMA)": '__global__ void k(const float* a) {\n  asm volatile("cp.async.bulk.tensor.2d.shared::cluster'
                           '.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" :: "r"(0));\n}\n',
    "cuTensorMapEncodeTiled": "#include <cudaTypedefs.h>\nvoid make(CUtensorMap* m) {\n"
                              "  cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, 0, 0, 0, 0, 0, 0, 0, 0);\n}\n"
                              "__global__ void k(const __grid_constant__ CUtensorMap m) { }\n",
    "CuTe copy atom": "#include <cute/tensor.hpp>\n__global__ void k(const float* a) {\n"
                      "  using Atom = cute::Copy_Atom<cute::SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>, float>;\n}\n",
}

TENSOR_SPELLINGS = {
    "wmma": "#include <mma.h>\n__global__ void k(const half* a) {\n"
            "  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> f;\n}\n",
    "wgmma": '__global__ void k(const half* a) {\n  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 '
             '{%0}, %1, %2, 1, 1, 1, 0, 0;" : "+f"(x));\n}\n',
    "CuTe MMA atom": "#include <cute/tensor.hpp>\n__global__ void k(const half* a) {\n"
                     "  auto mma = cute::make_tiled_mma(cute::SM80_16x8x16_F32F16F16F32_TN{});\n}\n",
    "CUTLASS tensor op": "#include <cutlass/gemm/device/gemm.h>\nusing G = cutlass::gemm::device::Gemm<float, "
                         "cutlass::layout::RowMajor, float, cutlass::layout::RowMajor, float, cutlass::layout::RowMajor,"
                         " float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80>;\n"
                         "torch::Tensor run(torch::Tensor a, torch::Tensor b) { G gemm; return a; }\n",
}


def test_mma_sync_and_cp_async_in_macros_are_recognised_and_scored():
    a = analyze_candidate(wrap(MMA_PTX), MM_REF)
    assert {"tensor_cores", "async_copy", "shared_memory", "smem_tiling"} <= a.technique_keys()
    tc = next(t for t in a.techniques if t.key == "tensor_cores")
    assert "mma.sync" in wrap(MMA_PTX).splitlines()[tc.line - 1]


@pytest.mark.parametrize("name", sorted(ASYNC_SPELLINGS))
def test_async_copy_spellings(name):
    assert "async_copy" in analyze_candidate(wrap(ASYNC_SPELLINGS[name]), MM_REF).technique_keys()


@pytest.mark.parametrize("name", sorted(TENSOR_SPELLINGS))
def test_tensor_core_spellings(name):
    assert "tensor_cores" in analyze_candidate(wrap(TENSOR_SPELLINGS[name]), MM_REF).technique_keys()


def test_the_words_in_comments_are_not_techniques():
    cuda = "// TODO: mma.sync, cp.async, wmma::fragment, cuda::memcpy_async\n__global__ void k(float* a) { }\n"
    assert not {"tensor_cores", "async_copy"} & analyze_candidate(wrap(cuda), MM_REF).technique_keys()


def test_plain_tf32_mma_on_fp32_is_named_but_3xtf32_is_not():
    tf32 = '__global__ void k(float* d) {\n  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ' \
           '{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" : "+f"(d[0]));\n}\n'
    a = analyze_candidate(wrap(tf32), MM_REF)
    f = next(f for f in a.findings if f.code == "tf32_tensor_cores")
    assert f.confidence == "possible" and "3xTF32" in f.message
    split = tf32.replace("__global__ void k", "// 3xTF32: big + small parts\n__device__ void split_tf32(float x) { }\n"
                                              "__global__ void k")
    assert "tf32_tensor_cores" not in codes(analyze_candidate(wrap(split), MM_REF))
    half_ref = MM_REF.replace("torch.randn(2048, 2048)", "torch.randn(2048, 2048, dtype=torch.float16)")
    assert "tf32_tensor_cores" not in codes(analyze_candidate(wrap(tf32), half_ref))


# ----------------------------------------------------------------------------- other kernel languages

LANGUAGES = [("triton_add.py", ADD_REF, "add_kernel", "triton"),
             ("triton_matmul.py", MM_REF, "matmul_relu_kernel", "triton"),
             ("cute_dsl_add.py", ADD_REF, "add_kernel", "cute_dsl"),
             ("tilelang_matmul.py", MM_REF, "matmul_relu", "tilelang"),
             ("thunderkittens_add.py", ADD_REF, "add_tk", "thunderkittens"),
             ("cupy_add.py", ADD_REF, "add_kernel", None),
             ("nvrtc_add.py", ADD_REF, "add_kernel", None),
             ("jiterator_add.py", ADD_REF, "add_kernel", None)]


@pytest.mark.parametrize("name, ref, kernel, language", LANGUAGES)
def test_kernels_in_other_languages_are_custom_code(name, ref, kernel, language):
    a = analyze_candidate((CASES / name).read_text(), ref)
    assert a.has_custom_code and a.custom_calls, name
    assert kernel in a.kernels
    assert not [f for f in a.findings if f.confidence in ("certain", "probable")], a.findings
    if language:
        assert language in a.technique_keys()
    assert not a.torch_ops  # device code in the kernel language is never read as PyTorch


def test_triton_dot_defaults_to_tf32_on_fp32_tasks():
    src = (CASES / "triton_matmul.py").read_text()
    assert "tf32_tensor_cores" not in codes(analyze_candidate(src, MM_REF))  # input_precision="ieee"
    plain = src.replace(', input_precision="ieee"', "")
    f = next(f for f in analyze_candidate(plain, MM_REF).findings if f.code == "tf32_tensor_cores")
    assert f.confidence == "possible" and "tf32x3" in f.message
    assert "tf32_tensor_cores" not in codes(analyze_candidate(src.replace('"ieee"', '"tf32x3"'), MM_REF))


def test_dsl_gemms_show_tensor_cores_and_pipelining():
    for name in ("triton_matmul.py", "tilelang_matmul.py"):
        keys = analyze_candidate((CASES / name).read_text(), MM_REF).technique_keys()
        assert {"tensor_cores", "async_copy"} <= keys, name


def test_triton_candidate_that_keeps_the_main_op_in_torch_is_caught():
    a = analyze_candidate((CASES / "triton_torch_main_op.py").read_text(), MM_REF)
    f = next(f for f in a.findings if f.code == "partial_fallback")
    assert f.confidence == "probable" and "matmul" in f.message


def test_a_name_bound_to_torch_is_not_a_kernel():
    src = (CASES / "cupy_add.py").read_text().replace(
        "        _add(((n", "        _add = torch.add\n        return _add(a, b)\n        _add(((n")
    a = analyze_candidate(src, ADD_REF)
    assert "add" in {o.op for o in a.torch_ops} or "pytorch_fallback" in codes(a)


@pytest.fixture
def ws(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    yield get_workspace()
    configure()


@pytest.mark.parametrize("name, ref", [("tilelang_matmul.py", "matmul_reference.py"),
                                       ("cute_dsl_add.py", "add_reference.py"),
                                       ("triton_matmul.py", "matmul_reference.py")])
def test_rubric_verdicts_for_other_languages(ws, name, ref):
    r = rubric_score(candidate=str(CASES / name), reference=str(CASES / ref))
    assert r.verdict == "clean", r.summary
    assert r.dimensions.operator_coverage.score == 1.0
    assert r.dimensions.cuda_engineering.score >= 0.5


def test_rubric_catches_triton_with_torch_main_op(ws):
    r = rubric_score(candidate=str(CASES / "triton_torch_main_op.py"), reference=str(CASES / "matmul_reference.py"))
    assert r.verdict == "suspect" and "matmul" in r.uncovered_ops


# ----------------------------------------------------------------------------- plan caches vs output caches

PY_HEAD = ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
           'ext = load_inline(name="e", cpp_sources="", cuda_sources="__global__ void k(float* a) { }", '
           'functions=["run", "make_plan"])\n\n')


def model(init: str, forward: str) -> str:
    ind = lambda s, n: "\n".join(" " * n + x for x in s.strip("\n").splitlines())  # noqa: E731
    return (PY_HEAD + "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"{ind(init, 8)}\n\n    def forward(self, a, b):\n{ind(forward, 8)}\n")


@pytest.mark.parametrize("forward", [
    "key = (a.shape, b.shape)\nif key not in self.plans:\n    self.plans[key] = ext.make_plan(a.size(0), b.size(1), a.size(1))\n"
    "return ext.run(a, b, self.plans[key])",
    "self.plans[a.shape] = self.plans.get(a.shape) or ext.make_plan(*a.shape)\nreturn ext.run(a, b, self.plans[a.shape])",
])
def test_a_plan_cache_keyed_on_shape_is_clean(forward):
    a = analyze_candidate(model("self.plans = {}", forward), MM_REF)
    assert not codes(a) & {"output_cache", "attribute_cache", "global_cache"}, a.findings


@pytest.mark.parametrize("forward, confidence", [
    ("key = (a.shape, b.shape)\nif key not in self.out:\n    self.out[key] = ext.run(a, b)\nreturn self.out[key]", "certain"),
    ("key = a.data_ptr()\nif key not in self.out:\n    self.out[key] = ext.run(a, b)\nreturn self.out[key]", "certain"),
    ("k = float(a.sum().item())\nif k not in self.out:\n    self.out[k] = ext.run(a, b)\nreturn self.out[k]", "certain"),
])
def test_an_output_cache_is_a_hack(forward, confidence):
    a = analyze_candidate(model("self.out = {}", forward), MM_REF)
    assert any(f.code == "output_cache" and f.confidence == confidence for f in a.findings), a.findings


def test_cxx_static_cache_of_plans_is_clean_of_tensors_is_not():
    plans = ("#include <cublasLt.h>\n#include <map>\n#include <tuple>\n"
             "static std::map<std::tuple<int, int, int>, cublasLtMatmulAlgo_t> plan_cache;\n"
             "static std::vector<torch::Tensor> helper(torch::Tensor a) { return {a}; }\n"
             "torch::Tensor run(torch::Tensor a, torch::Tensor b) { return a; }\n")
    assert "output_cache" not in codes(analyze_candidate(wrap(plans), MM_REF))
    outs = plans.replace("static std::map<std::tuple<int, int, int>, cublasLtMatmulAlgo_t> plan_cache;",
                         "static std::unordered_map<long, torch::Tensor> results;")
    assert "output_cache" in codes(analyze_candidate(wrap(outs), MM_REF))


@pytest.mark.parametrize("error, language", [
    ("ModuleNotFoundError: No module named 'tilelang'", "TileLang"),
    ("ModuleNotFoundError: No module named 'cutlass.cute'", "CuTe DSL"),
    ("ModuleNotFoundError: No module named 'cupy'", "CuPy"),
    ("ModuleNotFoundError: No module named 'cuda.bindings'", "cuda-python"),
    ("ModuleNotFoundError: No module named 'triton'", "Triton"),
])
def test_missing_kernel_language_package_has_a_clear_message(error, language):
    from stitch_mcp.analysis import missing_package_message

    text = missing_package_message(error)
    assert text and language in text and "not a bug in the candidate" in text


def test_other_import_errors_are_left_alone():
    from stitch_mcp.analysis import missing_package_message

    assert missing_package_message("ModuleNotFoundError: No module named 'reference'") is None
    assert missing_package_message("ImportError: cannot import name 'foo' from 'torch'") is None


def test_torch_inside_a_kernel_language_function_is_still_pytorch():
    src = (CASES / "cute_dsl_add.py").read_text().replace(
        "    m, n = mA.shape\n    add_kernel(mA, mB, mC)", "    torch.add(mA, mB, out=mC)\n    m, n = mA.shape\n    add_kernel(mA, mB, mC)")
    a = analyze_candidate(src, ADD_REF)
    assert "add" in {o.op for o in a.torch_ops}
    assert any(f.code == "partial_fallback" and f.confidence == "probable" for f in a.findings), a.findings


def test_a_kernel_cache_that_also_holds_a_torch_function_is_not_trusted():
    src = (CASES / "tilelang_matmul.py").read_text().replace(
        "        return self._kernels[key]", "        self._kernels['fallback'] = torch.matmul\n        return self._kernels[key]")
    src = src.replace("        return kernel(a.contiguous(), b.contiguous())",
                      "        return self._kernels['fallback'](a, b)")
    a = analyze_candidate(src, MM_REF)
    assert not a.custom_calls or {"pytorch_fallback", "no_custom_kernel"} & codes(a), (a.custom_calls, a.findings)
