"""Static analysis for rubric_score: every finding, positive and negative, including the
false-positive traps (comments and strings, direct cuBLAS, PyTorch's current stream)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitch_mcp.analysis import analyze_candidate, canonical_op, reference_ops, tokenize_cxx

CASES = Path(__file__).resolve().parent / "rubric_cases"

RELU_REF = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(1024)]

def get_init_inputs():
    return []
"""

GEMM_REF = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2.0

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return [64]
"""

KERNEL = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(),
        y.data_ptr<float>(), n);
    return y;
}
'''


def candidate(cuda: str = KERNEL, forward: str = "return ext.relu_cuda(x)", init: str = "", prelude: str = "",
              extra: str = "") -> str:
    body = "\n".join("        " + line for line in forward.strip("\n").splitlines())
    init_body = "\n".join("        " + line for line in init.strip("\n").splitlines()) if init else ""
    return (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
            f"from torch.utils.cpp_extension import load_inline\n{prelude}\n"
            f'cuda_src = r"""{cuda}"""\n'
            f'ext = load_inline(name="e", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);", '
            f'cuda_sources=cuda_src, functions=["relu_cuda"])\n\n'
            f"class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n{init_body}\n\n"
            f"    def forward(self, x):\n{body}\n{extra}")


def codes(a, confidence: str | None = None) -> set[str]:
    return {f.code for f in a.findings if confidence is None or f.confidence == confidence}


def line_of(src: str, needle: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if needle in line)


# ----------------------------------------------------------------------------- clean baseline


def test_clean_kernel_has_no_findings_and_maps_lines():
    src = candidate()
    a = analyze_candidate(src, RELU_REF)
    assert a.parsed and a.has_modelnew
    assert a.findings == []
    assert a.kernels == ["relu_kernel"]
    assert [c.call for c in a.custom_calls] == ["ext.relu_cuda"]
    stream = next(t for t in a.techniques if t.key == "current_stream")
    assert stream.line == line_of(src, "getCurrentCUDAStream")


def test_tokenizer_drops_comments_keeps_strings_as_tokens():
    toks = tokenize_cxx('// torch::matmul(a)\n/* cudaStreamCreate(&s) */ int x = 1; const char* s = "at::conv2d(";\n'
                        '#pragma unroll\nfoo();')
    ids = [t.value for t in toks if t.kind == "id"]
    assert "matmul" not in ids and "cudaStreamCreate" not in ids and "conv2d" not in ids
    assert any(t.kind == "pp" and "unroll" in t.value for t in toks)
    assert next(t for t in toks if t.value == "foo").line == 4


def test_canonical_ops():
    assert canonical_op("aten::addmm") == "matmul"
    assert canonical_op("torch.nn.functional.relu") == "relu"
    assert canonical_op("relu_") == "relu"
    assert canonical_op("aten::cudnn_convolution") == "conv"
    ops = {op for op, _, _ in reference_ops(GEMM_REF)}
    assert ops == {"matmul", "relu", "mul"}


# ----------------------------------------------------------------------------- PyTorch fallbacks


def test_forward_calling_torch_is_a_certain_fallback():
    src = candidate(forward="return torch.relu(x)")
    a = analyze_candidate(src, RELU_REF)
    f = next(f for f in a.findings if f.code == "pytorch_fallback")
    assert f.confidence == "certain" and f.evidence[0].line == line_of(src, "torch.relu(x)")


@pytest.mark.parametrize("forward", ["return F.relu(x)", "return x.relu()", "return nn.ReLU()(x)",
                                     "return torch.ops.aten.relu(x)"])
def test_fallback_spellings(forward):
    assert "pytorch_fallback" in codes(analyze_candidate(candidate(forward=forward), RELU_REF), "certain")


def test_nn_module_call_is_a_fallback_but_reading_its_weight_is_not():
    fallback = candidate(init="self.lin = nn.Linear(64, 64)", forward="return ext.relu_cuda(self.lin(x))")
    a = analyze_candidate(fallback, GEMM_REF)
    assert any(f.code == "partial_fallback" and f.confidence == "probable" for f in a.findings)
    honest = candidate(init="self.lin = nn.Linear(64, 64)",
                       forward="w = self.lin.weight\nreturn ext.relu_cuda(x)")
    assert "partial_fallback" not in codes(analyze_candidate(honest, GEMM_REF))


def test_glue_is_not_a_fallback():
    src = candidate(forward="x = x.contiguous().view(-1)\nout = torch.empty_like(x)\n"
                            "y = ext.relu_cuda(x)\nreturn y.view(x.shape)")
    assert analyze_candidate(src, RELU_REF).findings == []


def test_minor_op_left_in_torch_is_only_possible():
    src = candidate(forward="y = ext.relu_cuda(x)\nreturn y * 2.0")
    a = analyze_candidate(src, GEMM_REF)
    f = next(f for f in a.findings if f.code == "partial_fallback")
    assert f.confidence == "possible" and "mul" in f.message


def test_try_except_fallback_positive_and_negative():
    bad = candidate(forward="try:\n    return ext.relu_cuda(x)\nexcept RuntimeError:\n    return torch.relu(x)")
    a = analyze_candidate(bad, RELU_REF)
    f = next(f for f in a.findings if f.code == "try_except_fallback")
    assert f.confidence == "certain" and f.evidence[0].line == line_of(bad, "return torch.relu(x)")
    ok = candidate(forward="try:\n    return ext.relu_cuda(x)\nexcept RuntimeError as e:\n"
                           "    raise RuntimeError('kernel failed') from e")
    assert "try_except_fallback" not in codes(analyze_candidate(ok, RELU_REF))


def test_conditional_fallback_is_possible():
    src = candidate(forward="if x.is_cuda:\n    return ext.relu_cuda(x)\nelse:\n    return torch.relu(x)")
    f = next(f for f in analyze_candidate(src, RELU_REF).findings if f.code == "conditional_fallback")
    assert f.confidence == "possible"


def test_aten_call_in_cpp_is_a_fallback_but_not_in_comments_or_strings():
    bad = KERNEL.replace("auto y = torch::empty_like(x);", "auto y = torch::relu(x); return y;")
    src = candidate(cuda=bad)
    f = next(f for f in analyze_candidate(src, RELU_REF).findings if f.code == "aten_fallback")
    assert f.confidence == "certain" and f.evidence[0].line == line_of(src, "torch::relu(x)")
    method = KERNEL.replace("auto y = torch::empty_like(x);", "auto y = x.matmul(x);")
    assert "aten_fallback" in codes(analyze_candidate(candidate(cuda=method), RELU_REF), "probable")
    commented = KERNEL.replace("auto y = torch::empty_like(x);",
                               "// we could call torch::relu(x) or at::conv2d(...) here\n"
                               "    /* torch::matmul(a, b) */ auto y = torch::empty_like(x);\n"
                               '    const char* msg = "torch::matmul(x, x)";')
    assert analyze_candidate(candidate(cuda=commented), RELU_REF).findings == []


def test_docstring_mentioning_aten_is_not_code():
    src = candidate(extra='\n\ndef helper():\n    """Unlike torch::matmul(a, b), this kernel ... """\n    return 0\n')
    assert analyze_candidate(src, RELU_REF).findings == []


def test_direct_cublas_is_legitimate_without_global_kernel():
    cublas = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
torch::Tensor relu_cuda(torch::Tensor a) {
    auto c = torch::empty({a.size(0), a.size(0)}, a.options());
    cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
    float alpha = 1.f, beta = 0.f;
    int n = a.size(0);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data_ptr<float>(), n,
                a.data_ptr<float>(), n, &beta, c.data_ptr<float>(), n);
    return c;
}
'''
    a = analyze_candidate(candidate(cuda=cublas), GEMM_REF)
    assert not [f for f in a.findings if f.confidence in ("certain", "probable")]
    assert a.kernels == [] and "cuBLAS" in a.libraries and a.has_custom_code
    assert "cublas" in a.technique_keys()


def test_reference_import_and_reuse():
    src = candidate(prelude="from reference import Model as Ref")
    assert "reference_import" in codes(analyze_candidate(src, RELU_REF), "certain")
    sub = candidate().replace("class ModelNew(nn.Module):", "class ModelNew(Model):")
    assert "reference_reuse" in codes(analyze_candidate(sub, RELU_REF), "certain")
    dyn = candidate(forward="m = importlib.import_module('ref')\nreturn ext.relu_cuda(x)", prelude="import importlib")
    assert "dynamic_import" in codes(analyze_candidate(dyn, RELU_REF), "probable")


# ----------------------------------------------------------------------------- caches


def test_attribute_cache_positive_and_negative():
    bad = candidate(init="self.out = None",
                    forward="if self.out is not None:\n    return self.out\nself.out = ext.relu_cuda(x)\n"
                            "return self.out")
    assert "attribute_cache" in codes(analyze_candidate(bad, RELU_REF), "certain")
    # caching derived weights (not inputs) and the compiled extension is fine
    ok = candidate(init="self.w = nn.Parameter(torch.randn(4))\nself.wt = None\nself.mod = None",
                   forward="if self.wt is None:\n    self.wt = self.w.t().contiguous()\n"
                           "if self.mod is None:\n    self.mod = load_inline(name='x', cpp_sources='', cuda_sources='')\n"
                           "return ext.relu_cuda(x)")
    assert not codes(analyze_candidate(ok, RELU_REF)) & {"attribute_cache", "output_cache", "global_cache"}


def test_global_and_keyed_caches():
    glob = candidate(prelude="_LAST = None",
                     forward="global _LAST\n_LAST = ext.relu_cuda(x)\nreturn _LAST")
    assert "global_cache" in codes(analyze_candidate(glob, RELU_REF), "certain")
    keyed = candidate(prelude="_CACHE = {}",
                      forward="key = x.data_ptr()\nif key in _CACHE:\n    return _CACHE[key]\n"
                              "_CACHE[x.data_ptr()] = ext.relu_cuda(x)\nreturn _CACHE[key]")
    assert "output_cache" in codes(analyze_candidate(keyed, RELU_REF), "certain")
    lazy_ext = candidate(prelude="_EXT = None\ndef get_ext():\n    global _EXT\n    if _EXT is None:\n"
                                 "        _EXT = load_inline(name='y', cpp_sources='', cuda_sources='')\n"
                                 "    return _EXT",
                         forward="return get_ext().relu_cuda(x)")
    a = analyze_candidate(lazy_ext, RELU_REF)
    assert not codes(a) & {"global_cache", "pytorch_fallback", "no_custom_kernel"}
    assert a.custom_calls


# ----------------------------------------------------------------------------- harness and concurrency


def test_threads_processes_sleep():
    thr = candidate(prelude="import threading", forward="threading.Thread(target=print).start()\n"
                                                          "return ext.relu_cuda(x)")
    assert "background_work" in codes(analyze_candidate(thr, RELU_REF), "certain")
    pool = candidate(prelude="from concurrent.futures import ThreadPoolExecutor\nPOOL = ThreadPoolExecutor(2)")
    assert "background_work" in codes(analyze_candidate(pool, RELU_REF), "certain")
    slp = candidate(prelude="import time", forward="time.sleep(0.001)\nreturn ext.relu_cuda(x)")
    assert "sleep" in codes(analyze_candidate(slp, RELU_REF), "probable")
    # the words in a comment or an unused name are nothing
    ok = candidate(prelude="# threads and processes are not used; time.sleep is not called")
    assert analyze_candidate(ok, RELU_REF).findings == []


def test_harness_patching():
    timer = candidate(prelude="torch.cuda.Event.elapsed_time = lambda self, other: 0.001")
    assert "harness_patch" in codes(analyze_candidate(timer, RELU_REF), "certain")
    tm = candidate(prelude="import time\ntime.perf_counter = lambda: 0.0")
    assert "harness_patch" in codes(analyze_candidate(tm, RELU_REF), "certain")
    st = candidate(prelude="setattr(torch, 'allclose', lambda *a, **k: True)")
    assert "harness_patch" in codes(analyze_candidate(st, RELU_REF), "certain")
    tf32 = candidate(prelude="torch.backends.cuda.matmul.allow_tf32 = True")
    assert codes(analyze_candidate(tf32, RELU_REF)) == {"precision_downgrade"}
    ok = candidate(prelude="torch.backends.cudnn.benchmark = True\nconfig = {}\nconfig['x'] = 1")
    assert analyze_candidate(ok, RELU_REF).findings == []


def test_precision_cast_in_forward():
    src = candidate(forward="return ext.relu_cuda(x.half()).float()")
    assert "precision_downgrade" in codes(analyze_candidate(src, RELU_REF), "probable")


# ----------------------------------------------------------------------------- streams


def test_stream_word_in_comments_is_not_a_stream():
    cuda = KERNEL.replace("long n = x.numel();", "long n = x.numel();  // downstream ops; cudaStreamCreate "
                                                 "is not needed, no stream is created")
    src = candidate(cuda=cuda, prelude="# streams: we use the current stream, downstream code syncs")
    assert analyze_candidate(src, RELU_REF).findings == []


def test_private_cpp_stream_never_joined():
    cuda = KERNEL.replace("at::cuda::getCurrentCUDAStream()", "s").replace(
        "long n = x.numel();", "long n = x.numel();\n    cudaStream_t s; cudaStreamCreate(&s);")
    src = candidate(cuda=cuda)
    f = next(f for f in analyze_candidate(src, RELU_REF).findings if f.code == "unjoined_stream")
    assert f.confidence == "certain" and f.evidence[0].line == line_of(src, "cudaStreamCreate(&s)")
    joined = cuda.replace("return y;", "cudaStreamSynchronize(s);\n    return y;")
    a = analyze_candidate(candidate(cuda=joined), RELU_REF)
    assert "unjoined_stream" not in codes(a) and "joined_streams" in a.technique_keys()


def test_private_python_stream():
    bad = candidate(init="self.s = torch.cuda.Stream()",
                    forward="with torch.cuda.stream(self.s):\n    y = ext.relu_cuda(x)\nreturn y")
    assert "unjoined_stream" in codes(analyze_candidate(bad, RELU_REF), "certain")
    ok = candidate(init="self.s = torch.cuda.Stream()",
                   forward="with torch.cuda.stream(self.s):\n    y = ext.relu_cuda(x)\n"
                           "torch.cuda.current_stream().wait_stream(self.s)\nreturn y")
    assert "unjoined_stream" not in codes(analyze_candidate(ok, RELU_REF))


def test_passing_current_stream_is_credited():
    a = analyze_candidate(candidate(), RELU_REF)
    assert "current_stream" in a.technique_keys() and not a.findings


# ----------------------------------------------------------------------------- techniques


def test_techniques_with_evidence_lines():
    src = (CASES / "relu_improved.py").read_text()
    a = analyze_candidate(src, RELU_REF)
    keys = a.technique_keys()
    assert {"vectorized_access", "grid_stride_loop", "cache_hints", "launch_bounds", "loop_unrolling",
            "restrict", "current_stream"} <= keys
    assert a.kernels == ["relu_vec4_kernel", "relu_scalar_kernel"]
    gs = next(t for t in a.techniques if t.key == "grid_stride_loop")
    assert "i += stride" in src.splitlines()[gs.line - 1]


def test_gemm_techniques_from_code_and_inline_ptx():
    cuda = r'''
#include <mma.h>
using namespace nvcuda;
__global__ void k(const half* a, const half* b, float* c) {
    __shared__ half tile[16 * 16];
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    for (int i = 0; i < 4; ++i) { tile[threadIdx.x] = a[i]; __syncthreads(); }
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(0), "l"(a));
    float v = __shfl_down_sync(0xffffffff, 1.f, 1);
}
'''
    a = analyze_candidate(candidate(cuda=cuda), GEMM_REF)
    assert {"tensor_cores", "shared_memory", "smem_tiling", "async_copy", "warp_primitives"} <= a.technique_keys()


def test_unparseable_still_analysed():
    src = candidate() + "\n    def broken(:\n"
    a = analyze_candidate(src, RELU_REF)
    assert not a.parsed
    f = a.findings[0]
    assert f.code == "unparseable" and f.confidence == "probable" and "cannot be cleared" in f.message
    assert a.kernels == ["relu_kernel"]  # the CUDA is still read
