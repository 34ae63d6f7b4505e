"""Static analysis of KernelBench candidates and references, for rubric_score.

Python is read with `ast`: what `ModelNew.forward` (and everything it calls in the file) calls,
split into custom code (the compiled extension; Triton, CuTe DSL, TileLang, Numba and CuPy kernels;
NVRTC / cuda-python launches; jiterator functions; kernels built per shape and kept in a cache),
PyTorch compute ops and glue (view, contiguous, empty, ...); try/except and conditional fallbacks; imports of the
reference; global or attribute caches; threads, processes and sleeps; assignments to attributes
of torch, time or the harness; private CUDA streams.

The C++/CUDA sources (string literals handed to load_inline, CuPy, ...) are read with a small
tokenizer that drops comments and string literals, so the word "stream" or "torch::matmul" in a
comment is never mistaken for code. ATen compute calls (torch::matmul, at::conv2d, x.matmul(y))
are a PyTorch fallback; cuBLAS, cuBLASLt, cuDNN, CUTLASS, CUB, Thrust and ThunderKittens calls are
legitimate. `#define` bodies are read too (kernels often wrap `asm("cp.async ...")` in macros). C++
with no CUDA in it is C++ for the CPU: its techniques are SIMD, threads, cache blocking, fusion.
Each CUDA engineering technique found is reported with the line of the candidate .py it is on.

Nothing here imports torch or runs the candidate.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from stitch_mcp.models import Evidence, Finding

PY = "candidate.py"

# ---------------------------------------------------------------------------- op vocabulary

# Canonical names: several spellings of one computation map to one name, so that the reference's
# torch.matmul, a profile's aten::addmm and a candidate's F.linear line up.
_ALIASES = {
    "mm": "matmul", "bmm": "matmul", "addmm": "matmul", "addbmm": "matmul", "baddbmm": "matmul",
    "linear": "matmul", "einsum": "matmul", "matmul": "matmul", "addmv": "matmul", "mv": "matmul",
    "dot": "matmul", "tensordot": "matmul", "inner": "matmul", "outer": "matmul", "bilinear": "matmul",
    "conv1d": "conv", "conv2d": "conv", "conv3d": "conv", "convolution": "conv", "cudnn_convolution": "conv",
    "conv_depthwise2d": "conv", "slow_conv2d": "conv",
    "conv_transpose1d": "conv_transpose", "conv_transpose2d": "conv_transpose",
    "conv_transpose3d": "conv_transpose", "cudnn_convolution_transpose": "conv_transpose",
    "native_layer_norm": "layer_norm", "native_batch_norm": "batch_norm", "cudnn_batch_norm": "batch_norm",
    "batch_norm_elemt": "batch_norm", "native_group_norm": "group_norm", "log_softmax": "log_softmax",
    "max_pool1d": "max_pool", "max_pool2d": "max_pool", "max_pool3d": "max_pool",
    "max_pool2d_with_indices": "max_pool", "max_pool3d_with_indices": "max_pool",
    "avg_pool1d": "avg_pool", "avg_pool2d": "avg_pool", "avg_pool3d": "avg_pool",
    "adaptive_avg_pool1d": "adaptive_avg_pool", "adaptive_avg_pool2d": "adaptive_avg_pool",
    "adaptive_avg_pool3d": "adaptive_avg_pool", "adaptive_max_pool2d": "adaptive_max_pool",
    "scaled_dot_product_attention": "attention", "scaled_dot_product_flash_attention": "attention",
    "scaled_dot_product_efficient_attention": "attention", "multi_head_attention_forward": "attention",
    "clamp_min": "clamp", "clamp_max": "clamp", "clip": "clamp", "hardtanh": "hardtanh",
    "multiply": "mul", "true_divide": "div", "divide": "div", "subtract": "sub", "rsub": "sub",
    "maximum": "max", "minimum": "min", "amax": "max", "amin": "min", "frobenius_norm": "norm",
    "linalg_vector_norm": "norm", "vector_norm": "norm", "matrix_norm": "norm",
    "cross_entropy": "cross_entropy", "nll_loss": "cross_entropy", "nll_loss_nd": "cross_entropy",
}

# Torch functions / tensor methods / ATen ops that do real computation.
COMPUTE = {
    "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "einsum", "addmv", "mv", "dot",
    "tensordot", "inner", "outer", "bilinear", "conv1d", "conv2d", "conv3d", "convolution",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "relu", "relu6", "gelu", "silu", "mish",
    "sigmoid", "tanh", "softplus", "softsign", "elu", "selu", "celu", "leaky_relu", "hardtanh",
    "hardsigmoid", "hardswish", "logsigmoid", "prelu", "rrelu", "threshold", "softmax", "log_softmax",
    "softmin", "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
    "normalize", "sum", "mean", "prod", "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "cumsum",
    "cumprod", "argmax", "argmin", "amax", "amin", "max", "min", "maximum", "minimum", "topk", "sort",
    "argsort", "median", "mode", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt",
    "rsqrt", "abs", "neg", "reciprocal", "sin", "cos", "tan", "erf", "erfc", "sign", "floor", "ceil",
    "round", "trunc", "frac", "clamp", "clamp_min", "clamp_max", "clip", "where", "add", "sub", "mul",
    "div", "true_divide", "multiply", "divide", "subtract", "fmod", "remainder", "addcmul", "addcdiv",
    "lerp", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "dropout", "embedding", "scaled_dot_product_attention",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "hinge_embedding_loss",
    "cosine_similarity", "cosine_embedding_loss", "triplet_margin_loss", "margin_ranking_loss",
    "pairwise_distance", "cdist", "tril", "triu", "diag", "diag_embed", "trace", "flip", "roll",
    "cumulative_trapezoid", "interpolate", "upsample", "grid_sample", "pixel_shuffle", "fft", "rfft",
    "square", "any", "all", "gather", "scatter", "scatter_add", "index_select", "masked_fill",
    "lstm", "gru", "rnn_tanh", "rnn_relu", "matrix_exp", "inverse", "cholesky", "svd", "qr", "solve",
    "eq", "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_not", "bitwise_and",
}
COMPUTE |= {n + "_" for n in ("relu", "sigmoid", "tanh", "add", "sub", "mul", "div", "clamp", "exp",
                               "log", "pow", "sqrt", "neg", "abs", "addmm", "baddbmm", "gelu", "silu",
                               "leaky_relu", "hardtanh", "elu", "masked_fill", "scatter", "scatter_add")}

# Glue: shapes, allocation, views, device/dtype moves, copies.
GLUE = {
    "view", "reshape", "contiguous", "empty", "empty_like", "empty_strided", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_empty", "new_zeros", "new_ones", "new_full",
    "new_tensor", "size", "numel", "dim", "ndimension", "stride", "to", "cuda", "cpu", "type", "data_ptr",
    "is_contiguous", "permute", "transpose", "t", "flatten", "unflatten", "squeeze", "unsqueeze",
    "expand", "expand_as", "view_as", "reshape_as", "narrow", "select", "chunk", "split", "unbind",
    "clone", "copy_", "detach", "requires_grad_", "item", "tolist", "cat", "concat", "stack", "pad",
    "arange", "tensor", "as_tensor", "as_strided", "element_size", "get_device", "current_stream",
    "synchronize", "manual_seed", "no_grad", "inference_mode", "is_floating_point", "fill_", "zero_",
    "float", "double", "int", "long", "bool", "short", "char", "byte", "movedim", "moveaxis", "split_with_sizes",
    "broadcast_to", "from_numpy", "is_tensor", "set_grad_enabled", "device", "Size", "repeat", "tile",
    "repeat_interleave", "randn", "rand", "randint", "normal_", "uniform_", "numpy", "storage_offset",
    "half", "bfloat16", "current_device", "get_device_properties", "is_available", "empty_cache",
}
PRECISION_CASTS = {"half", "bfloat16"}

NN_MODULES = {
    "Linear": "matmul", "Bilinear": "matmul", "Conv1d": "conv", "Conv2d": "conv", "Conv3d": "conv",
    "ConvTranspose1d": "conv_transpose", "ConvTranspose2d": "conv_transpose",
    "ConvTranspose3d": "conv_transpose", "ReLU": "relu", "ReLU6": "relu6", "GELU": "gelu", "SiLU": "silu",
    "Mish": "mish", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus", "Softsign": "softsign",
    "ELU": "elu", "SELU": "selu", "CELU": "celu", "LeakyReLU": "leaky_relu", "Hardtanh": "hardtanh",
    "Hardsigmoid": "hardsigmoid", "Hardswish": "hardswish", "PReLU": "prelu", "Softmax": "softmax",
    "LogSoftmax": "log_softmax", "LayerNorm": "layer_norm", "BatchNorm1d": "batch_norm",
    "BatchNorm2d": "batch_norm", "BatchNorm3d": "batch_norm", "GroupNorm": "group_norm",
    "InstanceNorm1d": "instance_norm", "InstanceNorm2d": "instance_norm", "InstanceNorm3d": "instance_norm",
    "RMSNorm": "rms_norm", "MaxPool1d": "max_pool", "MaxPool2d": "max_pool", "MaxPool3d": "max_pool",
    "AvgPool1d": "avg_pool", "AvgPool2d": "avg_pool", "AvgPool3d": "avg_pool",
    "AdaptiveAvgPool1d": "adaptive_avg_pool", "AdaptiveAvgPool2d": "adaptive_avg_pool",
    "AdaptiveAvgPool3d": "adaptive_avg_pool", "AdaptiveMaxPool2d": "adaptive_max_pool", "Dropout": "dropout",
    "Embedding": "embedding", "LSTM": "rnn", "GRU": "rnn", "RNN": "rnn", "MultiheadAttention": "attention",
    "TransformerEncoderLayer": "attention", "CrossEntropyLoss": "cross_entropy", "MSELoss": "mse_loss",
    "Upsample": "interpolate", "PixelShuffle": "pixel_shuffle",
}

HEAVY = {"matmul", "conv", "conv_transpose", "attention", "rnn"}
REDUCTION = {"softmax", "log_softmax", "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm",
             "sum", "mean", "prod", "var", "std", "norm", "logsumexp", "cumsum", "cumprod", "argmax", "argmin",
             "max", "min", "max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "cross_entropy",
             "mse_loss", "l1_loss", "kl_div", "topk", "sort", "median", "normalize", "cosine_similarity",
             "hinge_embedding_loss", "triplet_margin_loss", "smooth_l1_loss", "huber_loss", "cdist"}


def canonical_op(name: str) -> str:
    """'aten::addmm' -> 'matmul', 'torch.nn.functional.relu' -> 'relu', 'relu_' -> 'relu'."""
    n = name.strip().split("(")[0]
    for sep in ("::", "."):
        n = n.rsplit(sep, 1)[-1]
    n = n.strip("_").lower()
    if n.endswith("_") or (n[:-1] in COMPUTE and n.endswith("_")):
        n = n.rstrip("_")
    n = n.removesuffix("_out").removesuffix("_forward")
    return _ALIASES.get(n, n)


def op_class(canonical: str) -> str:
    if canonical in HEAVY:
        return "gemm"
    if canonical in REDUCTION:
        return "reduction"
    return "elementwise"


def op_weight(canonical: str) -> float:
    """A static guess of an op's relative GPU time when no profile is available."""
    return {"gemm": 10.0, "reduction": 3.0, "elementwise": 1.0}[op_class(canonical)]


# ---------------------------------------------------------------------------- results


@dataclass
class OpUse:
    op: str  # canonical name
    call: str  # as written, e.g. "torch.relu" or "x.matmul"
    line: int | None
    text: str = ""
    file: str = PY


@dataclass
class Technique:
    key: str
    label: str
    line: int | None
    text: str
    file: str = PY


@dataclass
class CudaSource:
    text: str
    py_line: int  # line of the candidate .py holding the literal's first line
    name: str = ""


@dataclass
class Analysis:
    parsed: bool = True
    parse_error: str = ""
    has_modelnew: bool = False
    findings: list[Finding] = field(default_factory=list)  # anti-hacking
    techniques: list[Technique] = field(default_factory=list)
    torch_ops: list[OpUse] = field(default_factory=list)  # PyTorch compute reachable from forward
    aten_ops: list[OpUse] = field(default_factory=list)  # ATen compute called from C++
    custom_calls: list[OpUse] = field(default_factory=list)  # calls into custom kernels from forward
    kernels: list[str] = field(default_factory=list)  # __global__ / triton kernel names
    libraries: dict[str, int] = field(default_factory=dict)  # library -> first line
    launches: int = 0
    sources: list[CudaSource] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpu_code: bool = False  # CUDA C++ or a GPU kernel language
    cpu_loop_nests: int = 0  # outermost loops of C++ written for the CPU (passes over memory)
    ref_low_precision: bool = False  # the reference computes in fp16/bf16 (so TF32/BF16 math is within its rules)

    @property
    def target(self) -> str:
        """'cuda' (CUDA C++), 'dsl' (Triton, CuTe DSL, TileLang, ... with no CUDA C++), 'cpu' (C++ with
        no CUDA in it) or '' (no custom code to tell)."""
        if self.gpu_code:
            return "dsl" if self.technique_keys() & set(DSL_LANGUAGES) and not self.launches and \
                not any("__global__" in s.text for s in self.sources) else "cuda"
        return "cpu" if self.sources and self.has_custom_code else ""

    @property
    def has_custom_code(self) -> bool:
        return bool(self.kernels or self.libraries or self.custom_calls)

    def technique_keys(self) -> set[str]:
        return {t.key for t in self.techniques}

    def uncovered_ops(self) -> set[str]:
        return {o.op for o in self.torch_ops} | {o.op for o in self.aten_ops}


def _finding(code: str, confidence: str, message: str, line: int | None = None, text: str = "",
             severity: str = "error", file: str = PY, doc_id: str | None = None) -> Finding:
    ev = [Evidence(file=file, line=line, text=text.strip()[:200])] if (line or text) else []
    return Finding(code=code, severity=severity, confidence=confidence, message=message, evidence=ev,
                   doc_id=doc_id)


# ---------------------------------------------------------------------------- C++ / CUDA tokenizer


@dataclass
class Tok:
    kind: str  # id, num, punct, str, pp
    value: str
    line: int


_PUNCT = ["<<<", ">>>", "::", "->", "+=", "-=", "*=", "/=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
          "++", "--"]


def tokenize_cxx(text: str) -> list[Tok]:
    """C/C++/CUDA tokens with 1-based line numbers. Comments vanish; string and char literals are kept
    as single 'str' tokens (so code checks can skip them while asm() bodies stay inspectable);
    preprocessor lines are single 'pp' tokens."""
    toks: list[Tok] = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "#" and at_line_start:
            j, start = i, line
            buf = []
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    line += 1
                    continue
                if text.startswith("//", j):
                    while j < n and text[j] != "\n":
                        j += 1
                    break
                buf.append(text[j])
                j += 1
            toks.append(Tok("pp", "".join(buf), start))
            i = j
            continue
        at_line_start = False
        m = re.match(r'(?:u8|u|U|L)?R"([^(\s]{0,16})\(', text[i:i + 24])
        if m:  # raw string literal
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            toks.append(Tok("str", text[i:end], line))
            line += text.count("\n", i, end)
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            toks.append(Tok("str", text[i:j + 1], line))
            i = j + 1
            continue
        if c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            toks.append(Tok("id", text[i:j], line))
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            m = re.match(r"[0-9a-fA-FxX.]+(?:[eEpP][+-]?\d+)?[uUlLfF]*", text[i:])
            j = i + (m.end() if m else 1)
            toks.append(Tok("num", text[i:j], line))
            i = j
            continue
        for p in _PUNCT:
            if text.startswith(p, i):
                toks.append(Tok("punct", p, line))
                i += len(p)
                break
        else:
            toks.append(Tok("punct", c, line))
            i += 1
    return toks


# C++ identifiers and what they mean.
_LIB_PREFIXES = [("cublasLt", "cuBLASLt"), ("cublas", "cuBLAS"), ("cudnn", "cuDNN"), ("CUBLASLT_", "cuBLASLt"),
                 ("CUBLAS_", "cuBLAS"), ("CUDNN_", "cuDNN")]
_LIB_NAMESPACES = {"cutlass": "CUTLASS", "cute": "CUTLASS", "cub": "CUB", "thrust": "Thrust",
                   "cublasdx": "cuBLASDx"}
_ATEN_GLUE = GLUE | {"Tensor", "TensorOptions", "ScalarType", "IntArrayRef", "Scalar", "Device", "DeviceGuard",
                     "kFloat", "kFloat32", "kHalf", "kBFloat16", "kCUDA", "kInt", "kLong", "dtype", "from_blob",
                     "getCurrentCUDAStream", "getCurrentCUDABlasHandle", "getCurrentCUDABlasLtHandle",
                     "CUDAGuard", "OptionalCUDAGuard", "CUDAStreamGuard", "getStreamFromPool",
                     "getDefaultCUDAStream", "getCurrentDeviceProperties", "stream_synchronize"}
_STREAM_CREATE = {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                  "getStreamFromPool"}
_STREAM_JOIN = {"cudaStreamSynchronize", "cudaStreamWaitEvent", "cudaDeviceSynchronize", "cudaEventSynchronize",
                "synchronize", "stream_synchronize", "wait_stream"}
_CURRENT_STREAM = {"getCurrentCUDAStream", "getDefaultCUDAStream"}
_FAST_MATH = {"__expf", "__logf", "__fdividef", "__frcp_rn", "__fmaf_rn", "__sinf", "__cosf", "__tanf",
              "__powf", "__saturatef", "__frsqrt_rn", "__fsqrt_rn", "__exp10f", "__log2f"}
_WARP = {"__shfl_sync", "__shfl_down_sync", "__shfl_xor_sync", "__shfl_up_sync", "__reduce_add_sync",
         "__reduce_max_sync", "__reduce_min_sync", "__ballot_sync", "__any_sync", "__all_sync",
         "tiled_partition", "__match_any_sync", "__activemask"}
_VECTOR = {"float4", "float2", "int4", "int2", "uint4", "uint2", "double2", "half2", "__half2",
           "__nv_bfloat162", "longlong2", "char4", "uchar4"}
_PACKED_HALF = {"__hadd2", "__hmul2", "__hfma2", "__hmax2", "__hsub2", "__h2div", "h2exp", "__hmin2"}
_ASYNC = {"__pipeline_memcpy_async", "memcpy_async", "cp_async", "cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col",
          "__pipeline_commit", "__pipeline_wait_prior", "CUtensorMap", "make_tma_copy", "make_tma_atom", "load_async",
          "store_async", "memcpy_async_tx", "cp_async_fence", "cp_async_wait", "cp_async_bulk_tensor",
          "make_pipeline", "producer_commit", "consumer_wait"}
# Async-copy spellings by prefix: cutlass::arch::cp_async_zfill, cuda::ptx::cp_async_bulk_tensor_2d...,
# CuTe's SM80_CP_ASYNC_* / SM90_TMA_* copy atoms, cuTensorMapEncode*.
_ASYNC_ID = re.compile(r"^(cp_async|cuTensorMapEncode|SM\d+_CP_ASYNC|SM\d+_TMA_|SM\d+_BULK_COPY|tma_(load|store))")
# Tensor-core spellings: WMMA (nvcuda::wmma), CuTe/CUTLASS MMA atoms (SM80_16x8x16_F32F16F16F32_TN,
# SM90_64x128x16_F32BF16BF16_SS), CUTLASS's tensor-op class, ThunderKittens' mma_AB*, ldmatrix.
_TENSOR_ID = re.compile(r"^(SM\d+_\d+x\d+x\d+_|wgmma|__hmma|mma_sync$|mma_AB|mma_AtB|MMA_Atom$|TiledMMA$|"
                        r"make_tiled_mma$|OpClassTensorOp$|OpClassWmmaTensorOp$|ldmatrix|ldsm)")
_TF32_MMA = re.compile(r"^(__float_to_tf32|OpMultiplyAddFastF32|tfloat32_t|tf32)$")
_SPLIT_TF32 = re.compile(r"(?i)3x_?tf32|tf32_?x3|split_?tf32|tf32_?split|FastF32")
_CACHE_HINTS = {"__ldg", "__ldcs", "__ldcg", "__ldca", "__ldlu", "__ldcv", "__stcs", "__stcg", "__stwt",
                "__stwb", "__prefetch_global_l2"}
_TF32 = {"CUBLAS_COMPUTE_32F_FAST_TF32", "CUBLAS_TF32_TENSOR_OP_MATH", "CUBLAS_COMPUTE_32F_FAST_16F",
         "CUBLAS_COMPUTE_32F_FAST_16BF", "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION"}

DSL_LANGUAGES = ("triton", "cute_dsl", "tilelang", "numba", "cupy")

TECHNIQUE_LABELS = {
    "shared_memory": "shared memory", "smem_tiling": "shared-memory tiling", "vectorized_access":
    "vectorized (16/8-byte) memory access", "warp_primitives": "warp-level primitives (shuffles, votes)",
    "tensor_cores": "tensor cores (WMMA/MMA/library tensor ops)", "async_copy": "asynchronous copies "
    "(cp.async / memcpy_async / TMA)", "grid_stride_loop": "grid-stride loop", "loop_unrolling":
    "loop unrolling", "launch_bounds": "__launch_bounds__", "restrict": "__restrict__ pointers",
    "fast_math": "fast-math intrinsics", "cache_hints": "cache-hinted loads/stores (__ldg, __ldcs, ...)",
    "packed_half": "packed half2/bf162 math", "cublas": "cuBLAS", "cublaslt": "cuBLASLt",
    "cublaslt_epilogue": "cuBLASLt fused epilogue", "cudnn": "cuDNN", "cutlass": "CUTLASS/CuTe", "cub": "CUB",
    "thrust": "Thrust", "cuda_graphs": "CUDA graphs", "current_stream": "launches on PyTorch's current stream",
    "joined_streams": "extra streams joined back to the current stream", "dynamic_smem":
    "dynamic shared memory opt-in", "occupancy_api": "occupancy API for launch configuration",
    "fusion": "kernel fusion (one kernel covers several reference ops)", "triton": "Triton kernels",
    "thunderkittens": "ThunderKittens tiles", "cute_dsl": "CuTe DSL kernels", "tilelang": "TileLang kernels",
    "numba": "Numba CUDA kernels", "cupy": "CuPy JIT kernels", "autotune": "autotuned launch configurations",
    # C++ for the CPU
    "cpu_simd": "SIMD vectorisation (omp simd, at::vec::Vectorized, AVX/NEON intrinsics)",
    "cpu_threads": "multithreading (at::parallel_for, OpenMP)", "cpu_cache_blocking": "cache blocking (tiled loops)",
    "loop_fusion": "loop fusion (one pass over memory covers several reference ops)",
}
# Evidence of CUDA in a C++ source (as opposed to C++ written for the CPU)
_CUDA_TEXT = re.compile(r"__global__|__device__|<<<|\bcuda[A-Z_]\w*|\bcu[A-Z]\w*\(|ATen/cuda|c10/cuda|cuda_runtime|"
                        r"\bcublas|\bcudnn|\bcutlass|\bcute::|kittens|\bthrust::|\bcub::|blockIdx|threadIdx")


@dataclass
class CxxFacts:
    kernels: list[str] = field(default_factory=list)
    launches: list[tuple[int, list[str]]] = field(default_factory=list)
    aten: list[OpUse] = field(default_factory=list)
    aten_methods: list[OpUse] = field(default_factory=list)
    techniques: list[Technique] = field(default_factory=list)
    libraries: dict[str, int] = field(default_factory=dict)
    stream_creates: list[int] = field(default_factory=list)
    stream_joins: list[int] = field(default_factory=list)
    current_stream: list[int] = field(default_factory=list)
    tf32: list[int] = field(default_factory=list)
    tf32_mma: list[int] = field(default_factory=list)  # TF32 tensor-core math written in the kernel
    split_tf32: bool = False  # ... with the 3xTF32 split that keeps fp32 accuracy
    tensor_caches: list[int] = field(default_factory=list)  # static containers of tensors (replayed outputs)
    outer_loops: int = 0  # loops not nested in another loop (passes over memory, for CPU C++)


def _line_text(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


# Words that may stand between `__global__` and a kernel's name, with or without a parenthesised
# argument list: `__global__ void __launch_bounds__(256, 2) k(...)`, `__cluster_dims__(8, 1, 1)`,
# `__attribute__((noinline))`, `[[nodiscard]]`, `static`, `inline`.
_DECL_ATTRIBUTES = {"__launch_bounds__", "__cluster_dims__", "__align__", "__maxnreg__", "__attribute__",
                    "__declspec", "alignas", "__noinline__", "__forceinline__", "__inline__", "inline", "static",
                    "extern", "__host__", "__device__", "__grid_constant__", "__block_size__", "__nv_register_params__"}


def _skip_balanced(code: list[Tok], j: int, open_: str, close: str) -> int:
    """Index just past the bracket group that opens at code[j]."""
    depth = 0
    while j < len(code):
        if code[j].value == open_:
            depth += 1
        elif code[j].value == close or (close == ">" and code[j].value == ">>"):
            depth -= 2 if code[j].value == ">>" else 1
            if depth <= 0:
                return j + 1
        j += 1
    return j


def _kernel_name_after(code: list[Tok], k: int) -> str | None:
    """The name declared by the `__global__` at code[k]: the identifier before the parameter list,
    skipping attributes (with their arguments), `[[...]]` and template arguments of the return type
    or of an explicit specialisation (`k<float>(...)`)."""
    j, last = k + 1, None
    while j < len(code):
        t = code[j]
        if t.value in (";", "{", "}", "="):
            return None
        if t.kind == "id" and t.value in _DECL_ATTRIBUTES:
            j += 1
            if j < len(code) and code[j].value == "(":
                j = _skip_balanced(code, j, "(", ")")
            continue
        if t.value == "[" and j + 1 < len(code) and code[j + 1].value == "[":
            j = _skip_balanced(code, j, "[", "]")
            continue
        if t.value == "<" and last is not None:
            j = _skip_balanced(code, j, "<", ">")
            continue
        if t.value == "(":
            return last
        last = t.value if t.kind == "id" else (last if t.value in ("*", "&", "::") else None)
        j += 1
    return None


# Kernel-language packages a candidate may import: top-level module -> (language, what to install)
KERNEL_PACKAGES = {
    "triton": ("Triton", "triton (bundled with the Linux CUDA wheels of torch)"),
    "tilelang": ("TileLang", "tilelang"),
    "cutlass": ("CuTe DSL", "nvidia-cutlass-dsl"),
    "cupy": ("CuPy", "cupy-cuda12x or cupy-cuda13x (matching the CUDA driver)"),
    "cupyx": ("CuPy", "cupy-cuda12x or cupy-cuda13x (matching the CUDA driver)"),
    "cuda": ("cuda-python (NVRTC / driver API)", "cuda-python"),
    "numba": ("Numba CUDA", "numba-cuda"),
    "pycuda": ("PyCUDA", "pycuda"),
    "thunderkittens": ("ThunderKittens", "ThunderKittens (headers from its repository; set THUNDERKITTENS_ROOT)"),
}


def missing_package_message(error: str) -> str | None:
    """A clear reason for an import error that comes from a kernel-language package missing where the
    verifier runs candidates (not a bug in the candidate), or None for any other import error."""
    m = re.search(r"No module named '([\w.]+)'", error)
    if not m:
        return None
    top = m.group(1).split(".")[0]
    if top not in KERNEL_PACKAGES:
        return None
    language, install = KERNEL_PACKAGES[top]
    return (f"the candidate is written in {language}, but `{m.group(1)}` is not installed in the Python that runs "
            f"candidates (install {install} into that environment). This is the verifier's setup, not a bug in the "
            f"candidate; its static rubric is still available from rubric_score.")


def kernel_names(source: str) -> list[str]:
    """Names of the kernels a candidate defines: `__global__` functions in its C++/CUDA strings (or in
    a .cu text), Triton / CuTe DSL / TileLang / Numba kernels. One parser for the rubric and
    profile_kernel, so attributes and templates between `__global__ void` and the name read alike."""
    try:
        ast.parse(source)
    except SyntaxError:
        if "__global__" in source and not re.search(r"^\s*(import|from)\s+\w", source, re.M):
            return list(analyze_cxx(CudaSource(source, 1)).kernels)
    return list(analyze_candidate(source).kernels)


def _stride_vars(code: list[Tok]) -> set[str]:
    """Variables initialised from gridDim (e.g. `long stride = gridDim.x * blockDim.x;`)."""
    strides: set[str] = set()
    for k in range(1, len(code) - 1):
        if code[k].value == "=" and code[k - 1].kind == "id":
            j = k + 1
            while j < len(code) and code[j].value not in (";", "{", "}"):
                if code[j].value == "gridDim":
                    strides.add(code[k - 1].value)
                    break
                j += 1
    return strides


def _pragma_techniques(text: str) -> list[str]:
    keys = []
    if re.match(r"\s*#\s*pragma\s+unroll", text):
        keys.append("loop_unrolling")
    if re.match(r"\s*#\s*pragma\s+omp\s+(parallel|for|taskloop)", text):
        keys.append("cpu_threads")
    if re.match(r"\s*#\s*pragma\s+(omp\s+(parallel\s+for\s+)?simd|GCC\s+ivdep|clang\s+loop\s+vectorize|GCC\s+unroll)",
                text) or re.search(r"\bsimd\b", text) and "omp" in text:
        keys.append("cpu_simd")
    return keys


def _launch_args(code: list[Tok], k: int) -> list[str]:
    """The launch configuration between `<<<` (at code[k]) and `>>>`, one string per argument."""
    args, depth, j = [], 0, k + 1
    cur: list[str] = []
    while j < len(code) and not (code[j].value == ">>>" and depth == 0):
        v = code[j].value
        if v in "([{":
            depth += 1
        elif v in ")]}":
            depth -= 1
        if v == "," and depth == 0:
            args.append(" ".join(cur))
            cur = []
        else:
            cur.append(v)
        j += 1
    args.append(" ".join(cur))
    return args


def _id_technique(v: str, prev: str) -> str | None:
    """The technique one identifier shows by itself (shuffles, vector types, async copies, ...)."""
    table = [(_WARP, "warp_primitives"), (_VECTOR, "vectorized_access"), (_PACKED_HALF, "packed_half"),
             (_ASYNC, "async_copy"), (_CACHE_HINTS, "cache_hints"), (_FAST_MATH, "fast_math"),
             ({"__launch_bounds__"}, "launch_bounds"), ({"__restrict__", "__restrict"}, "restrict"),
             ({"cudaStreamBeginCapture"}, "cuda_graphs"), ({"cudaFuncSetAttribute"}, "dynamic_smem")]
    for words, key in table:
        if v in words:
            return key
    if v.startswith("cudaGraph"):
        return "cuda_graphs"
    if v.startswith("cudaOccupancy"):
        return "occupancy_api"
    if _TENSOR_ID.match(v):
        return "tensor_cores"
    if v in ("parallel_for", "parallel_reduce", "thread", "async") and prev == "::" or v == "omp_get_thread_num":
        return "cpu_threads"
    if v in ("Vectorized", "vec") and prev == "::" or re.match(r"^_mm(256|512)?_\w+|^__m(128|256|512)|^v\w+q_f32$", v):
        return "cpu_simd"
    if _ASYNC_ID.match(v):
        return "async_copy"
    return None


def _asm_techniques(toks: list[Tok]) -> list[tuple[str, int, bool]]:
    """(technique, line, TF32 mma) for each inline-PTX body: asm("...") strings right after asm [volatile] (."""
    out = []
    for k, t in enumerate(toks):
        if t.kind == "id" and t.value in ("asm", "__asm__"):
            j = k + 1
            while j < len(toks) and toks[j].value != "(" and j < k + 4:  # asm volatile (
                j += 1
            end = _skip_balanced(toks, j, "(", ")") if j < len(toks) and toks[j].value == "(" else j
            body = " ".join(x.value for x in toks[j:end] if x.kind == "str")
            if re.search(r"\b(w?gmma|mma\.sync|mma\.sp|ldmatrix|wgmma|tcgen05\.mma)", body):
                out.append(("tensor_cores", t.line, bool(re.search(r"\bmma\S*\.tf32|wgmma\S*\.tf32", body))))
            if re.search(r"\bcp\.(reduce\.)?async", body):
                out.append(("async_copy", t.line, False))
            if re.search(r"ld\.global(\.nc)?\.v[24]|st\.global\.v[24]", body):
                out.append(("vectorized_access", t.line, False))
    return out


def _qualified(code: list[Tok], k: int) -> tuple[list[str], str]:
    """The parts of the qualified name starting at code[k] and the token after it."""
    parts, j = [code[k].value], k
    while j + 2 < len(code) and code[j + 1].value == "::" and code[j + 2].kind == "id":
        parts.append(code[j + 2].value)
        j += 2
    return parts, code[j + 1].value if j + 1 < len(code) else ""


def _namespace_facts(parts: list[str]) -> tuple[str | None, str | None]:
    """(library, technique) a qualified name shows: cutlass::..., nvcuda::wmma::..., cuda::memcpy_async."""
    library = _LIB_NAMESPACES.get(parts[0]) if len(parts) > 1 else None
    if parts[0] == "kittens":
        library = "ThunderKittens"
    key = None
    if parts[0] == "nvcuda" or "wmma" in parts:
        key = "tensor_cores"
    elif parts[0] in ("cooperative_groups", "cg") and ("tiled_partition" in parts or "reduce" in parts):
        key = "warp_primitives"
    elif parts[-1] in ("memcpy_async", "pipeline") and parts[0] == "cuda":
        key = "async_copy"
    return library, key


def _static_tensor_container(code: list[Tok], k: int) -> bool:
    """Whether the `static` at code[k] declares a container of tensors (not a function returning one)."""
    decl, end = [], ""
    for x in code[k + 1:k + 40]:
        if x.value in (";", "=", "{", "("):
            end = x.value
            break
        decl.append(x.value)
    return end != "(" and bool({"map", "unordered_map", "vector", "deque", "list", "array"} & set(decl)) \
        and "Tensor" in decl


def analyze_cxx(src: CudaSource) -> CxxFacts:
    """Facts about one C++/CUDA source; lines are converted to the candidate .py's lines."""
    toks = _with_macro_bodies(tokenize_cxx(src.text))
    facts = CxxFacts()
    off = src.py_line - 1

    def tech(key: str, line: int) -> None:
        if not any(t.key == key for t in facts.techniques):
            facts.techniques.append(Technique(key, TECHNIQUE_LABELS[key], line + off, _line_text(src.text, line)))

    def lib(name: str, line: int) -> None:
        facts.libraries.setdefault(name, line + off)
        key = {"cuBLAS": "cublas", "cuBLASLt": "cublaslt", "cuDNN": "cudnn", "CUTLASS": "cutlass", "CUB": "cub",
               "Thrust": "thrust", "cuBLASDx": "cublas", "ThunderKittens": "thunderkittens"}[name]
        tech(key, line)

    code = [t for t in toks if t.kind != "str"]
    shared = syncthreads = loop = False
    strides = _stride_vars(code)
    for k, t in enumerate(code):
        if t.kind == "pp":
            for key in _pragma_techniques(t.value):
                tech(key, t.line)
            continue
        if t.kind != "id":
            if t.value == "<<<":
                facts.launches.append((t.line + off, _launch_args(code, k)))
            continue
        v = t.value
        prev = code[k - 1].value if k else ""
        nxt = code[k + 1].value if k + 1 < len(code) else ""
        if prev != "::":  # a qualified name starts here: at::matmul, cublasLt..., nvcuda::wmma::...
            parts, after = _qualified(code, k)
            if len(parts) > 1 and parts[0] in ("torch", "at", "aten") and after in ("(", "<"):
                last = parts[-1]
                if last in COMPUTE and last not in _ATEN_GLUE and "cuda" not in parts[1:-1]:
                    qual = "::".join(parts)
                    facts.aten.append(OpUse(canonical_op(last), qual, t.line + off, _line_text(src.text, t.line)))
            library, key = _namespace_facts(parts)
            if library:
                lib(library, t.line)
            if key:
                tech(key, t.line)
        # method call on a tensor in C++: x.matmul(y), out.add_(b)
        if prev in (".", "->") and nxt == "(" and v in COMPUTE and v not in _ATEN_GLUE:
            recv = code[k - 2] if k >= 2 else None
            if recv is not None and (recv.kind == "id" or recv.value == ")"):
                facts.aten_methods.append(OpUse(canonical_op(v), f".{v}", t.line + off,
                                                _line_text(src.text, t.line)))
        for prefix, name in _LIB_PREFIXES:
            if v.startswith(prefix) and len(v) > len(prefix):
                lib(name, t.line)
                if v.startswith("CUBLASLT_EPILOGUE_") and v != "CUBLASLT_EPILOGUE_DEFAULT":
                    tech("cublaslt_epilogue", t.line)
                break
        if v in ("getCurrentCUDABlasHandle", "getCurrentCUDABlasLtHandle"):
            lib("cuBLASLt" if "Lt" in v else "cuBLAS", t.line)
        if v == "__global__":
            name = _kernel_name_after(code, k)
            if name and name not in facts.kernels:
                facts.kernels.append(name)
        elif v == "__shared__":
            shared = True
            tech("shared_memory", t.line)
        elif v == "__syncthreads":
            syncthreads = True
        elif v in ("for", "while"):
            loop = True
            header = [x.value for x in code[k + 1:_skip_balanced(code, k + 1, "(", ")")]] if nxt == "(" else []
            if v == "for" and "+=" in header and ("gridDim" in header or set(header) & strides):
                tech("grid_stride_loop", t.line)
        elif _id_technique(v, prev):
            tech(_id_technique(v, prev), t.line)
        if _TF32_MMA.match(v) or (v == "precision" and nxt == "::"):
            if v != "precision" or (k + 2 < len(code) and code[k + 2].value == "tf32"):
                facts.tf32_mma.append(t.line + off)
        if _SPLIT_TF32.search(v):
            facts.split_tf32 = True
        if v == "static" and _static_tensor_container(code, k):
            facts.tensor_caches.append(t.line + off)
        if v in _STREAM_CREATE and nxt == "(":
            facts.stream_creates.append(t.line + off)
        if v in _STREAM_JOIN and nxt == "(":
            facts.stream_joins.append(t.line + off)
        if v in _CURRENT_STREAM:
            facts.current_stream.append(t.line + off)
        if v in _TF32:
            facts.tf32.append(t.line + off)
    facts.outer_loops, blocked = _loop_nests(code)
    if blocked:
        tech("cpu_cache_blocking", blocked)
    if shared and syncthreads and loop:
        first = next(t for t in facts.techniques if t.key == "shared_memory")
        facts.techniques.append(Technique("smem_tiling", TECHNIQUE_LABELS["smem_tiling"], first.line, first.text))
    for key, line, tf32 in _asm_techniques(toks):
        tech(key, line)
        if tf32:
            facts.tf32_mma.append(line + off)
    if facts.launches and any(t for t in facts.current_stream):
        line = facts.current_stream[0]
        facts.techniques.append(Technique("current_stream", TECHNIQUE_LABELS["current_stream"], line,
                                          _line_text(src.text, line - off)))
    return facts


def _loop_nests(code: list[Tok]) -> tuple[int, int | None]:
    """(outermost for/while loops, the line of a loop nest stepping by tiles) of a token stream: a
    fused CPU pass is one loop nest where a naive one has a loop per op; `i += TILE` inside another
    loop is cache blocking."""
    outer, end, blocked = 0, -1, None
    for k, t in enumerate(code):
        if t.value not in ("for", "while") or t.kind != "id" or k + 1 >= len(code) or code[k + 1].value != "(":
            continue
        close = _skip_balanced(code, k + 1, "(", ")")
        header = [x.value for x in code[k + 1:close]]
        nested = k <= end
        if not nested:
            outer += 1
            body = close
            if body < len(code) and code[body].value == "{":
                end = _skip_balanced(code, body, "{", "}") - 1
            else:
                while body < len(code) and code[body].value != ";":
                    body += 1
                end = body
        step = [header[i + 1] for i in range(len(header) - 1) if header[i] == "+="]
        tiled = any(re.search(r"(?i)tile", s) or re.fullmatch(r"(?i)(block|blk|bs|b[mnk]|t[mnk])(_?(size|[mnk]))?", s)
                    or s.isdigit() and int(s) >= 8 for s in step)
        inner = any(x.value in ("for", "while") for x in code[close:end + 1]) if not nested else True
        if tiled and inner and blocked is None:
            blocked = t.line
    return outer, blocked


def _with_macro_bodies(toks: list[Tok]) -> list[Tok]:
    """The tokens with each `#define`'s body tokenised after it (on the directive's line): kernels
    often wrap `asm volatile("cp.async ...")`, `mma.sync` or shuffles in macros."""
    out: list[Tok] = []
    for t in toks:
        out.append(t)
        if t.kind == "pp":
            m = re.match(r"\s*#\s*define\s+\w+(?:\([^)]*\))?(.*)", t.value, re.S)
            if m and m.group(1).strip():
                out.extend(Tok(x.kind, x.value, t.line) for x in tokenize_cxx(m.group(1)))
    return out


_CXX_HINT = re.compile(r"__global__|__device__|#include|torch::|at::|<<<|cudaMalloc|extern\s+\"C\"|"
                       r"\bcublas|\bcudnn|TORCH_CHECK|PYBIND11_MODULE")


def looks_like_cxx(text: str) -> bool:
    return bool(_CXX_HINT.search(text)) and ("(" in text and (";" in text or "{" in text))


# ---------------------------------------------------------------------------- Python analysis


def _dotted(node: ast.AST) -> str:
    """'torch.nn.functional.relu' for an Attribute chain; '' when the root is not a Name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        inner = _dotted(node.func)
        return (inner + "()." + ".".join(reversed(parts))) if inner and parts else ""
    if isinstance(node, ast.Subscript):
        inner = _dotted(node.value)
        return (inner + "[]" + ("." + ".".join(reversed(parts)) if parts else "")) if inner else ""
    return ""


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


class _Module:
    """Names and definitions of one parsed program."""

    def __init__(self, tree: ast.Module, source: str):
        self.tree, self.source = tree, source
        self.lines = source.splitlines()
        self.alias: dict[str, str] = {}  # local name -> dotted module path
        self.imports: list[tuple[str, int]] = []
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.alias[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                    self.imports.append((a.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
                    self.imports.append((f"{mod}.{a.name}" if mod else a.name, node.lineno))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node

    def text(self, line: int | None) -> str:
        return self.lines[line - 1].strip() if line and 0 < line <= len(self.lines) else ""

    def resolve(self, dotted: str) -> str:
        """Expand the first component through imports: F.relu -> torch.nn.functional.relu."""
        if not dotted:
            return dotted
        head, _, rest = dotted.partition(".")
        full = self.alias.get(head)
        if full is None:
            return dotted
        return f"{full}.{rest}" if rest else full


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


_EXT_LOADERS = ("load_inline", "load", "RawKernel", "RawModule", "SourceModule", "get_function", "compile",
                "ElementwiseKernel", "ReductionKernel", "jit", "get_kernel", "_create_jit_fn",
                "_create_multi_output_jit_fn", "cuModuleGetFunction", "cuLibraryGetKernel")
# packages whose compile()/jit()/get_kernel() build a GPU kernel the candidate wrote
_KERNEL_PACKAGES = ("cpp_extension", "cupy", "nvrtc", "numba", "tilelang", "cutlass", "triton", "jiterator",
                    "cuda.core", "cuda.bindings", "cuda.cuda", "pycuda")
# calls that launch a kernel built by the candidate (cuda-python driver API, cuda.core)
_LAUNCHERS = ("cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel")


def _is_ext_loader(resolved: str) -> bool:
    last = resolved.rsplit(".", 1)[-1]
    if last not in _EXT_LOADERS:
        return False
    if last in ("load_inline", "RawKernel", "RawModule", "SourceModule", "ElementwiseKernel", "ReductionKernel",
                "get_function", "_create_jit_fn", "_create_multi_output_jit_fn", "cuModuleGetFunction",
                "cuLibraryGetKernel"):
        return True
    if last == "load":  # torch.utils.cpp_extension.load, never triton.language.load or torch.load
        return "cpp_extension" in resolved
    return any(p in resolved for p in _KERNEL_PACKAGES) and not resolved.startswith("triton.language")


def kernel_language(decorator: str) -> str | None:
    """The kernel language a (resolved) decorator marks a function as written in, or None."""
    if decorator.startswith("triton.") and decorator.endswith(("jit", "autotune", "heuristics")):
        return "triton"
    if decorator in ("cutlass.cute.kernel", "cutlass.cute.jit", "cute.kernel", "cute.jit"):
        return "cute_dsl"
    if decorator.startswith("tilelang") and decorator.endswith(("jit", "prim_func", "lazy_jit")) or \
            decorator.endswith("tir.prim_func"):
        return "tilelang"
    if decorator.startswith("numba.cuda.") or decorator == "cupyx.jit.rawkernel":
        return "numba" if decorator.startswith("numba") else "cupy"
    return None


# (pattern on a resolved dotted name, technique, label) for kernels written in Python kernel languages
_DSL_TECHNIQUES = [
    (r"^triton\.language\.dot$|^tilelang\.language\.gemm|^cutlass\.cute\..*(Mma|mma|warpgroup|tcgen05|gemm)",
     "tensor_cores", "tensor cores (tl.dot / T.gemm / CuTe MMA atoms)"),
    (r"^num_stages$|^tilelang\.language\.Pipelined$|^cutlass\.cute\..*(cpasync|tma|CopyBulk)|"
     r"^triton\.language\..*(tensor_descriptor|descriptor_load)|^cutlass\.pipeline",
     "async_copy", "software-pipelined / asynchronous loads (num_stages, T.Pipelined, cp.async or TMA atoms)"),
    (r"^triton\.language\.(sum|max|min|reduce|argmax|argmin|xor_sum|cumsum|associative_scan)$|"
     r"^tilelang\.language\.(reduce_\w+|cumsum|all_reduce)$|^cutlass\.cute\..*(shuffle|warp_reduc)",
     "warp_primitives", "block reductions (tl.sum / T.reduce_* / CuTe shuffles lower to warp shuffles)"),
    (r"^tilelang\.language\.alloc_shared$|^cutlass\.cute\..*(SmemAllocator|smem)",
     "shared_memory", "shared-memory tiles (T.alloc_shared / CuTe smem)"),
    (r"^triton\.language\.arange$|^tilelang\.language\.(Parallel|vectorized|Vectorized)$",
     "vectorized_access", "block loads and stores over contiguous ranges (vectorised by the compiler)"),
    (r"^triton\.language\.num_programs$", "grid_stride_loop", "persistent loop over tiles (tl.num_programs)"),
    (r"^triton\.autotune$|^triton\.Config$|^tilelang\.autotune", "autotune", "autotuned launch configurations"),
]


class _PyAnalyzer:
    def __init__(self, mod: _Module, reference_source: str | None, is_reference: bool = False):
        self.mod = mod
        self.ref_src = reference_source or ""
        self.is_reference = is_reference
        self.a = Analysis()
        self.ext_names: set[str] = set()  # names bound to compiled extensions or built kernels
        self.ext_attrs: set[str] = set()  # self.<attr> bound to extensions (or containers of built kernels)
        self.ext_factories: set[str] = set()  # functions ("f") and methods ("self.f") returning an extension
        self.kernel_defs: dict[str, str] = {}  # kernel-language function -> language (triton, tilelang, ...)
        self.kernel_nodes: set[int] = set()  # ids of their FunctionDef nodes (device code, not host code)
        self.nn_attrs: dict[str, str] = {}  # self.<attr> -> canonical op of an nn module
        self.torch_aliases: dict[str, str] = {}
        self.seen: set[int] = set()

    @property
    def triton_kernels(self) -> set[str]:
        return {k for k, lang in self.kernel_defs.items() if lang == "triton"}

    # -- setup
    def collect_bindings(self) -> None:
        mod = self.mod
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    lang = kernel_language(mod.resolve(_dotted(dec.func if isinstance(dec, ast.Call) else dec)))
                    if lang:
                        self.kernel_defs.setdefault(node.name, lang)
                        self.kernel_nodes.add(id(node))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = mod.resolve(_dotted(node.value.func))
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        cls = callee.rsplit(".", 1)[-1]
                        if cls in NN_MODULES and (callee.startswith("torch.nn") or callee.startswith("nn.")
                                                  or callee == cls):
                            self.nn_attrs[target.attr] = NN_MODULES[cls]
        # names also bound to a PyTorch callable are never trusted as kernels (`k = torch.relu; k(x)`)
        # (and no attribute or container of self that ever holds one: `self._k["x"] = torch.relu`)
        torch_bound: set[str] = set()
        for n in ast.walk(mod.tree):
            if not isinstance(n, ast.Assign):
                continue
            value = mod.resolve(_dotted(n.value.func if isinstance(n.value, ast.Call) else n.value))
            if not value.startswith("torch.") or isinstance(n.value, ast.Call) and _is_ext_loader(value):
                continue
            for t in n.targets:
                t = t.value if isinstance(t, ast.Subscript) else t
                if isinstance(t, ast.Name):
                    torch_bound.add(t.id)
                elif isinstance(t, ast.Attribute):
                    torch_bound.add(t.attr)
        # local aliases of torch callables: `relu = torch.relu` ... `relu(x)` is torch.relu(x)
        self.torch_aliases = {t.id: mod.resolve(_dotted(n.value)) for n in ast.walk(mod.tree)
                              if isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute)
                              and mod.resolve(_dotted(n.value)).startswith("torch.")
                              for t in n.targets if isinstance(t, ast.Name)}
        for _ in range(4):  # to a fixed point: factories of factories, caches of built kernels
            before = (len(self.ext_names), len(self.ext_attrs), len(self.ext_factories))
            self._bind_pass(torch_bound)
            if before == (len(self.ext_names), len(self.ext_attrs), len(self.ext_factories)):
                break

    def _bind_pass(self, torch_bound: set[str]) -> None:
        for node in self.host_nodes(self.mod.tree):
            if isinstance(node, ast.Assign) and self.builds_kernel(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in torch_bound:
                        self.ext_names.add(target.id)
                    elif isinstance(target, ast.Attribute) and target.attr not in torch_bound:
                        self.ext_attrs.add(target.attr)
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
                            and target.value.attr not in torch_bound:
                        self.ext_attrs.add(target.value.attr)  # self._kernels[key] = build(...)
        scopes = [(n, fn) for n, fn in self.mod.functions.items()] + [
            (f"self.{n}", fn) for c in self.mod.classes.values() for n, fn in _methods(c).items()]
        for name, fn in scopes:
            if id(fn) in self.kernel_nodes:
                continue
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Return) and node.value is not None and (
                        self.builds_kernel(node.value) or isinstance(node.value, ast.Name)
                        and node.value.id in self.kernel_defs):
                    self.ext_factories.add(name)

    def builds_kernel(self, value: ast.AST) -> bool:
        """Whether an expression evaluates to a compiled extension or a built kernel."""
        if isinstance(value, ast.Name):
            return value.id in self.ext_names
        if isinstance(value, ast.Attribute):
            return isinstance(value.value, ast.Name) and value.value.id == "self" and value.attr in self.ext_attrs
        if isinstance(value, ast.Subscript):
            return self.builds_kernel(value.value)
        if not isinstance(value, ast.Call):
            return False
        f = value.func
        written = _dotted(f)
        if _is_ext_loader(self.mod.resolve(written)) or written in self.ext_factories:
            return True
        if isinstance(f, ast.Name) and self.kernel_defs.get(f.id) in ("tilelang", "cute_dsl"):
            return True  # @tilelang.jit factories return the compiled kernel
        if isinstance(f, ast.Attribute) and f.attr in ("get", "setdefault", "get_function", "get_kernel",
                                                       "compile"):
            return self.builds_kernel(f.value)
        return False

    def is_kernel_call(self, f: ast.AST) -> bool:
        """Whether calling `f` runs custom device code."""
        if isinstance(f, ast.Name):
            return f.id in self.ext_names or f.id in self.kernel_defs
        if isinstance(f, ast.Subscript):  # kernel[grid](...) (Triton, Numba) or self._kernels[key](...)
            base = _dotted(f.value)
            return base.rsplit(".", 1)[-1] in self.kernel_defs or self.builds_kernel(f.value)
        if isinstance(f, ast.Call):  # self._get_kernel(n)(x), build(n)(x)
            return self.builds_kernel(f)
        if isinstance(f, ast.Attribute):
            if f.attr == "launch" and isinstance(f.value, ast.Call):  # cute: kernel(args).launch(grid=...)
                return self.is_kernel_call(f.value.func)
            root = _root(f)
            return self.builds_kernel(f) or self.builds_kernel(f.value) or (
                isinstance(root, ast.Name) and root.id in self.ext_names)
        return False

    def host_nodes(self, fn: ast.AST):
        """ast.walk over host code: kernel-language functions nested in `fn` are device code."""
        todo = [fn]
        while todo:
            node = todo.pop()
            yield node
            todo.extend(c for c in ast.iter_child_nodes(node) if id(c) not in self.kernel_nodes)

    # -- reachability
    def reachable(self, cls: ast.ClassDef) -> list[ast.FunctionDef]:
        methods = _methods(cls)
        # methods inherited from other classes in the file
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.mod.classes and base.id != cls.name:
                for k, v in _methods(self.mod.classes[base.id]).items():
                    methods.setdefault(k, v)
        start = methods.get("forward") or methods.get("__call__")
        if start is None:
            return []
        out, todo = [], [start]
        while todo:
            fn = todo.pop()
            if id(fn) in self.seen or id(fn) in self.kernel_nodes:
                continue
            self.seen.add(id(fn))
            out.append(fn)
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Call):
                    f = node.func
                    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
                            and f.attr in methods:
                        todo.append(methods[f.attr])
                    elif isinstance(f, ast.Name) and f.id in self.mod.functions:
                        todo.append(self.mod.functions[f.id])
                    elif isinstance(f, ast.Name) and f.id in self.mod.classes:
                        call = _methods(self.mod.classes[f.id]).get("apply") or _methods(
                            self.mod.classes[f.id]).get("forward")
                        if call:
                            todo.append(call)
                    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                            and f.value.id in self.mod.classes and f.attr in ("apply", "forward"):
                        m = _methods(self.mod.classes[f.value.id])
                        if "forward" in m:
                            todo.append(m["forward"])
        return out

    # -- classification of one call
    def classify(self, call: ast.Call, tensors: set[str]) -> tuple[str, str, str]:
        """(kind, canonical op, text) with kind in custom, compute, glue, other."""
        f = call.func
        written = _dotted(f)
        resolved = self.mod.resolve(written)
        if isinstance(f, ast.Name) and f.id in self.torch_aliases:
            resolved = self.torch_aliases[f.id]
        elif self.is_kernel_call(f):
            return "custom", written or ast.unparse(f)[:60], written
        if resolved.rsplit(".", 1)[-1] in _LAUNCHERS or resolved.startswith("cuda.core") and \
                resolved.endswith(".launch"):
            return "custom", resolved, written
        if isinstance(f, ast.Attribute):
            inner = f.value
            if isinstance(inner, ast.Name) and inner.id == "self" and f.attr in self.nn_attrs:
                return "compute", self.nn_attrs[f.attr], written
        if resolved.startswith("torch.ops."):
            parts = resolved.split(".")
            if len(parts) > 3 and parts[2] == "aten":
                return "compute", canonical_op(parts[3]), written
            return "custom", resolved, written
        if resolved.startswith("torch.") or resolved.startswith("torch.nn.functional"):
            last = resolved.rsplit(".", 1)[-1]
            if ".cuda." in resolved or resolved.startswith("torch.cuda") or last in GLUE:
                return "glue", last, written
            if last in NN_MODULES:  # nn.ReLU()(x) style
                return "compute", NN_MODULES[last], written
            if last in COMPUTE:
                return "compute", canonical_op(last), written
            return "other", last, written
        if isinstance(f, ast.Attribute):
            name = f.attr
            recv = _root(f.value)
            tensorish = (isinstance(recv, ast.Name) and (recv.id in tensors or recv.id == "self"))
            if tensorish and name in COMPUTE and name not in GLUE:
                return "compute", canonical_op(name), written
            if tensorish and name in GLUE:
                return "glue", name, written
        if isinstance(f, ast.Call):  # nn.ReLU()(x)
            inner = self.mod.resolve(_dotted(f.func)).rsplit(".", 1)[-1]
            if inner in NN_MODULES:
                return "compute", NN_MODULES[inner], written
        return "other", written, written

    def tensor_names(self, fn: ast.FunctionDef) -> set[str]:
        names = {a.arg for a in fn.args.args + fn.args.kwonlyargs if a.arg != "self"}
        if fn.args.vararg:
            names.add(fn.args.vararg.arg)
        shapeish = {"size", "shape", "numel", "dim", "stride", "item", "data_ptr", "element_size", "tolist",
                    "is_contiguous"}
        for _ in range(2):
            for node in self.host_nodes(fn):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                    val = node.value
                    uses = {n.id for n in ast.walk(val) if isinstance(n, ast.Name)}
                    attrs = {n.attr for n in ast.walk(val) if isinstance(n, ast.Attribute)}
                    if uses & names and not (attrs & shapeish) or (isinstance(val, ast.Call) and not (
                            attrs & shapeish)):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for t in targets:
                            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
                            names.update(e.id for e in elts if isinstance(e, ast.Name))
        return names

    # -- the main pass
    def run(self) -> Analysis:
        mod, a = self.mod, self.a
        self.collect_bindings()
        self.collect_sources()
        cls = mod.classes.get("Model" if self.is_reference else "ModelNew")
        a.has_modelnew = cls is not None
        if cls is None:
            return a
        fns = self.reachable(cls)
        forward_calls: list[tuple[str, str, int, str, ast.FunctionDef]] = []
        for fn in fns:
            tensors = self.tensor_names(fn)
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Call):
                    kind, op, written = self.classify(node, tensors)
                    forward_calls.append((kind, op, node.lineno, written, fn))
                    if kind == "compute":
                        a.torch_ops.append(OpUse(op, written, node.lineno, mod.text(node.lineno)))
                    elif kind == "custom":
                        a.custom_calls.append(OpUse(op, written, node.lineno, mod.text(node.lineno)))
                elif isinstance(node, ast.BinOp):
                    op = self._binop(node, tensors)
                    if op:
                        a.torch_ops.append(OpUse(op, ast.unparse(node)[:60], node.lineno, mod.text(node.lineno)))
        if self.is_reference:
            return a
        self.dsl_techniques()
        self.a.gpu_code = self.a.gpu_code or bool(self.kernel_defs) or any(
            isinstance(n, ast.keyword) and n.arg in ("cuda_sources", "extra_cuda_cflags") for n in ast.walk(mod.tree)
        ) or any(name.split(".")[0] in ("cupy", "cupyx", "triton", "numba", "tilelang", "cutlass", "cuda", "pycuda")
                 or "jiterator" in name for name, _ in mod.imports + [(v, 0) for v in self.torch_aliases.values()]) \
            or any(".jiterator." in mod.resolve(_dotted(n.func)) for n in ast.walk(mod.tree) if isinstance(n, ast.Call))
        self.check_fallbacks(cls, fns)
        self.check_reference_use(cls)
        self.check_caches(fns)
        self.check_concurrency(fns)
        self.check_harness()
        self.check_streams_py()
        self.check_precision(fns)
        return a

    def dsl_techniques(self) -> None:
        """Kernels written in Python kernel languages, and the techniques their calls and launch
        settings show (tl.dot / T.gemm / CuTe MMA atoms are tensor cores, num_stages and T.Pipelined
        pipeline the loads, ...)."""
        a, mod = self.a, self.mod
        a.kernels.extend(sorted(k for k in self.kernel_defs if k not in a.kernels))
        for node in ast.walk(mod.tree):  # device code cannot call PyTorch: a torch op there runs on the host
            if id(node) in self.kernel_nodes:
                for call in ast.walk(node):
                    if isinstance(call, ast.Call):
                        kind, op, written = self.classify(call, set())
                        if kind == "compute" and self.mod.resolve(_dotted(call.func)).startswith("torch."):
                            a.torch_ops.append(OpUse(op, written, call.lineno, mod.text(call.lineno)))
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) in self.kernel_nodes:
                lang = self.kernel_defs[node.name]
                if lang not in self.a.technique_keys():
                    a.techniques.append(Technique(lang, TECHNIQUE_LABELS[lang], node.lineno, mod.text(node.lineno)))
        if not self.kernel_defs and not self.ext_names and not self.ext_attrs:
            return
        self._triton_tf32()
        have = a.technique_keys()
        for node in ast.walk(mod.tree):
            name, line = "", getattr(node, "lineno", None)
            if isinstance(node, ast.Attribute):
                name = mod.resolve(_dotted(node))
            elif isinstance(node, ast.keyword) and node.arg == "num_stages" and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, int) and node.value.value >= 2:
                name, line = "num_stages", node.value.lineno
            for pattern, key, label in _DSL_TECHNIQUES:
                if name and key not in have and re.search(pattern, name):
                    have.add(key)
                    a.techniques.append(Technique(key, label, line, mod.text(line)))

    def _triton_tf32(self) -> None:
        """tl.dot on fp32 operands defaults to TF32: on an fp32 task say so unless the call asks for
        "ieee" or the 3xTF32 "tf32x3" precision (or allow_tf32=False)."""
        if self._ref_low_precision():
            return
        for node in ast.walk(self.mod.tree):
            if isinstance(node, ast.Call) and self.mod.resolve(_dotted(node.func)) == "triton.language.dot":
                kw = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
                if kw.get("input_precision") in ("ieee", "tf32x3") or kw.get("allow_tf32") is False:
                    continue
                self.a.findings.append(_finding(
                    "tf32_tensor_cores", "possible",
                    "tl.dot on fp32 operands uses TF32 by default (10 mantissa bits), a precision downgrade on an "
                    "fp32 task: pass input_precision=\"tf32x3\" (3xTF32, fp32-accurate) or \"ieee\"",
                    node.lineno, self.mod.text(node.lineno), severity="warning", doc_id="card:kernel-languages"))
                return

    def _binop(self, node: ast.BinOp, tensors: set[str]) -> str | None:
        if isinstance(node.op, ast.MatMult):
            return "matmul"
        ops = {ast.Mult: "mul", ast.Add: "add", ast.Sub: "sub", ast.Div: "div", ast.Pow: "pow"}
        name = ops.get(type(node.op))
        if name is None:
            return None

        def tensorish(x: ast.AST) -> bool:
            if isinstance(x, ast.Name):
                return x.id in tensors
            if isinstance(x, ast.Attribute):
                return isinstance(x.value, ast.Name) and x.value.id == "self" and not x.attr.startswith("_")
            if isinstance(x, ast.Call):
                k, _, _ = self.classify(x, tensors)
                return k in ("compute", "custom")
            if isinstance(x, ast.BinOp):
                return self._binop(x, tensors) is not None
            return False

        if tensorish(node.left) or tensorish(node.right):
            return name
        return None

    # -- sources
    def collect_sources(self) -> None:
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(self.mod.tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        for node in ast.walk(self.mod.tree):
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                if isinstance(parents.get(id(node)), ast.JoinedStr):
                    continue
                text = node.value if isinstance(node.value, str) else node.value.decode("utf-8", "replace")
            elif isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "0" for v in node.values)
            if text is None or "\n" not in text and len(text) < 20:
                continue
            parent = parents.get(id(node))
            if isinstance(parent, ast.Expr):  # a docstring or bare string: prose, unless plainly code
                if not re.search(r"__global__|#include", text):
                    continue
            if looks_like_cxx(text):
                self.a.sources.append(CudaSource(text, node.lineno))
        for node in ast.walk(self.mod.tree):
            if isinstance(node, ast.Call) and self.mod.resolve(_dotted(node.func)).endswith("cpp_extension.load"):
                self.a.notes.append(f"line {node.lineno}: sources loaded from files are not analysed")
            if isinstance(node, ast.Call) and self.mod.resolve(_dotted(node.func)).endswith(
                    ("_create_jit_fn", "_create_multi_output_jit_fn")) and node.args:
                # torch.cuda.jiterator: the code string is a C++ function template that becomes the kernel
                arg = node.args[0]
                if isinstance(arg, ast.Name):  # code_string = "template <typename T> T k(T x) {...}"
                    arg = next((n.value for n in ast.walk(self.mod.tree) if isinstance(n, ast.Assign)
                                and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets)), arg)
                code = arg.value if isinstance(arg, ast.Constant) else ""
                m = re.search(r"(\w+)\s*\(", re.sub(r"template\s*<[^>]*>", "", str(code)))
                if m and m.group(1) not in self.a.kernels:
                    self.a.kernels.append(m.group(1))
            if isinstance(node, ast.keyword) and node.arg in ("extra_cuda_cflags", "extra_cflags"):
                flags = [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                         and isinstance(c.value, str)]
                if any("fast_math" in f or "fast-math" in f for f in flags):
                    self.a.techniques.append(Technique("fast_math", TECHNIQUE_LABELS["fast_math"],
                                                       node.value.lineno, self.mod.text(node.value.lineno)))

    # -- anti-hacking checks
    def check_fallbacks(self, cls: ast.ClassDef, fns: list[ast.FunctionDef]) -> None:
        a, mod = self.a, self.mod
        for fn in fns:
            tensors = self.tensor_names(fn)
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Try):
                    body_kinds = self._kinds(node.body, tensors)
                    for h in node.handlers:
                        hk = self._kinds(h.body, tensors)
                        if "compute" in hk:
                            line = next(n.lineno for n in ast.walk(ast.Module(body=h.body, type_ignores=[]))
                                        if isinstance(n, ast.Call) and self.classify(n, tensors)[0] == "compute")
                            conf = "certain" if "custom" in body_kinds or not body_kinds else "probable"
                            a.findings.append(_finding(
                                "try_except_fallback", conf,
                                "a try/except falls back to PyTorch compute when the custom path fails, so a "
                                "broken kernel still passes", line, mod.text(line)))
                        elif all(isinstance(s, ast.Pass) for s in h.body) and "custom" in body_kinds:
                            a.findings.append(_finding(
                                "swallowed_kernel_error", "probable",
                                "a failing custom call is silenced with `except: pass`; its output may be garbage",
                                h.lineno, mod.text(h.lineno), severity="warning"))
                elif isinstance(node, ast.If):
                    bk, ok = self._kinds(node.body, tensors), self._kinds(node.orelse, tensors)
                    if ("custom" in bk and "compute" in ok) or ("compute" in bk and "custom" in ok):
                        a.findings.append(_finding(
                            "conditional_fallback", "possible",
                            "one branch runs the custom kernel and the other PyTorch; make sure the benchmark "
                            "inputs take the custom branch", node.lineno, mod.text(node.lineno), severity="warning"))

    def _kinds(self, body: list[ast.stmt], tensors: set[str]) -> set[str]:
        kinds = set()
        for stmt in body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Call):
                    kinds.add(self.classify(n, tensors)[0])
                    f = n.func
                    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                        kinds.add("method")
        return kinds

    def check_reference_use(self, cls: ast.ClassDef) -> None:
        a, mod = self.a, self.mod
        for name, line in mod.imports:
            low = name.lower()
            if any(w in low.split(".") for w in ("reference", "ref", "kernelbench", "problem", "task")) or \
                    low.endswith(".model") or "reference" in low:
                a.findings.append(_finding("reference_import", "certain",
                                           f"imports `{name}`: the candidate must not run the reference", line,
                                           mod.text(line)))
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call):
                d = mod.resolve(_dotted(node.func))
                if d in ("importlib.import_module", "__import__", "exec", "eval", "runpy.run_path",
                         "importlib.util.spec_from_file_location", "inspect.getsource"):
                    a.findings.append(_finding("dynamic_import", "probable",
                                               f"`{d}` loads or runs code the rubric cannot see", node.lineno,
                                               mod.text(node.lineno), severity="warning"))
            if isinstance(node, ast.Subscript) and mod.resolve(_dotted(node.value)) == "sys.modules":
                a.findings.append(_finding("dynamic_import", "probable", "reads or writes sys.modules",
                                           node.lineno, mod.text(node.lineno), severity="warning"))
        for base in cls.bases:
            bname = _dotted(base)
            if bname.split(".")[-1] == "Model":
                if "Model" not in mod.classes:
                    a.findings.append(_finding("reference_reuse", "certain",
                                               "ModelNew subclasses the reference Model", cls.lineno,
                                               mod.text(cls.lineno)))
                else:
                    fwd = _methods(cls).get("forward")
                    if fwd is None or any(isinstance(n, ast.Call) and _dotted(n.func).endswith("forward") and
                                          isinstance(n.func, ast.Attribute) and
                                          (_dotted(n.func).startswith("super()") or
                                           _dotted(n.func).startswith("Model.")) for n in ast.walk(fwd)):
                        a.findings.append(_finding("reference_reuse", "certain",
                                                   "ModelNew runs the reference Model's forward", cls.lineno,
                                                   mod.text(cls.lineno)))
        fwd = _methods(cls).get("forward")
        if fwd is not None:
            for n in ast.walk(fwd):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Model":
                    a.findings.append(_finding("reference_reuse", "certain", "forward builds the reference Model",
                                               n.lineno, mod.text(n.lineno)))

    def check_caches(self, fns: list[ast.FunctionDef]) -> None:
        a, mod = self.a, self.mod
        for fn in fns:
            params = {x.arg for x in fn.args.args if x.arg != "self"}
            tensors = self.tensor_names(fn)
            input_derived = tensors
            stored_attrs: dict[str, int] = {}
            local_values: dict[str, list[ast.AST]] = {}  # local name -> the values assigned to it
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                            if isinstance(e, ast.Name):
                                local_values.setdefault(e.id, []).append(node.value)
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Global):
                    for g in node.names:
                        assigned = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == g for t in n.targets)]
                        if any(self._from_inputs(n.value, input_derived) for n in assigned):
                            a.findings.append(_finding("global_cache", "certain",
                                                       f"forward stores input-derived data in global `{g}`: "
                                                       "outputs can be replayed across calls", node.lineno,
                                                       mod.text(node.lineno)))
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                                and self._from_inputs(node.value, input_derived) and \
                                not (isinstance(node.value, ast.Call) and
                                     _is_ext_loader(mod.resolve(_dotted(node.value.func)))):
                            stored_attrs[t.attr] = node.lineno
                        if isinstance(t, ast.Subscript) and self._persistent(t.value, local_values) \
                                and self._is_output(node.value, input_derived):
                            keyed = self._keyed_by_identity(t.slice, params) or any(
                                self._keyed_by_identity(v, params) for n in ast.walk(t.slice)
                                if isinstance(n, ast.Name) for v in local_values.get(n.id, []))
                            a.findings.append(_finding("output_cache", "certain" if keyed else "probable",
                                                       "results are cached under a key made from the inputs' "
                                                       "identity, pointer, shape or values (caching a compiled "
                                                       "kernel, plan, handle or descriptor per shape is fine; "
                                                       "caching outputs is not)", node.lineno,
                                                       mod.text(node.lineno)))
            for node in self.host_nodes(fn):
                if isinstance(node, ast.Return) and node.value is not None:
                    for n in ast.walk(node.value):
                        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                                and n.attr in stored_attrs:
                            a.findings.append(_finding(
                                "attribute_cache", "certain",
                                f"forward returns self.{n.attr}, which an earlier call filled from its inputs: "
                                "a cached output", stored_attrs[n.attr], mod.text(stored_attrs[n.attr])))
                if isinstance(node, ast.If):
                    test_attrs = {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)}
                    for attr in stored_attrs.keys() & test_attrs:
                        a.findings.append(_finding(
                            "attribute_cache", "probable",
                            f"forward branches on self.{attr}, which it fills from its inputs", node.lineno,
                            mod.text(node.lineno), severity="warning"))
            for dec in fn.decorator_list:
                d = mod.resolve(_dotted(dec.func if isinstance(dec, ast.Call) else dec))
                if d.endswith(("lru_cache", "functools.cache", "cache")) and "functools" in d or d == "cache":
                    a.findings.append(_finding("memoized_function", "probable",
                                               f"{fn.name} is memoized; with tensor arguments that replays outputs",
                                               dec.lineno, mod.text(dec.lineno), severity="warning"))
        # dedupe identical findings
        seen, uniq = set(), []
        for f in a.findings:
            key = (f.code, f.evidence[0].line if f.evidence else None)
            if key not in seen:
                seen.add(key)
                uniq.append(f)
        a.findings[:] = uniq

    @staticmethod
    def _from_inputs(value: ast.AST, inputs: set[str]) -> bool:
        return any(isinstance(n, ast.Name) and n.id in inputs and n.id != "self" for n in ast.walk(value))

    @staticmethod
    def _keyed_by_identity(key: ast.AST, params: set[str]) -> bool:
        for n in ast.walk(key):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("id", "hash"):
                return True
            if isinstance(n, ast.Attribute) and n.attr in ("data_ptr", "shape", "_cdata", "untyped_storage", "size",
                                                           "item", "tolist", "tobytes", "sum", "numpy"):
                return True
        return False

    @staticmethod
    def _persistent(container: ast.AST, local_values: dict[str, list[ast.AST]]) -> bool:
        """A container that outlives the call: an attribute of self or a module-level name."""
        if isinstance(container, ast.Attribute):
            return isinstance(container.value, ast.Name) and container.value.id == "self"
        return isinstance(container, ast.Name) and container.id not in local_values

    _SIZES = {"size", "shape", "numel", "dim", "ndim", "ndimension", "stride", "dtype", "device", "is_contiguous",
              "element_size", "get_device", "is_cuda", "layout"}

    def _is_output(self, value: ast.AST, tensors: set[str]) -> bool:
        """Whether a cached value is (derived from) a result on the inputs' data, as opposed to a
        compiled kernel, a plan, a handle or a descriptor built from sizes, dtypes and devices."""
        if self.builds_kernel(value):
            return False
        sized = {id(n.value) for n in ast.walk(value) if isinstance(n, ast.Attribute) and n.attr in self._SIZES}
        return any(isinstance(n, ast.Name) and n.id in tensors and n.id != "self" and id(n) not in sized
                   for n in ast.walk(value))

    def check_concurrency(self, fns: list[ast.FunctionDef]) -> None:
        a, mod = self.a, self.mod
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.Call):
                continue
            d = mod.resolve(_dotted(node.func))
            last = d.rsplit(".", 1)[-1]
            if last in ("Thread", "Timer") and d.startswith("threading") or last in ("Process", "Pool") and \
                    d.startswith("multiprocessing") or last in ("ThreadPoolExecutor", "ProcessPoolExecutor") or \
                    d in ("os.fork", "_thread.start_new_thread", "asyncio.create_task", "asyncio.run"):
                a.findings.append(_finding("background_work", "certain",
                                           f"starts concurrent work (`{d}`): work outside the timed call or "
                                           "racing the harness", node.lineno, mod.text(node.lineno)))
            elif d.startswith("subprocess.") or d in ("os.system", "os.popen", "os.execv", "os.spawnv"):
                a.findings.append(_finding("subprocess", "probable", f"runs a process (`{d}`)", node.lineno,
                                           mod.text(node.lineno), severity="warning"))
            elif d == "time.sleep":
                a.findings.append(_finding("sleep", "probable", "sleeps: nothing a kernel wrapper needs, and it "
                                           "distorts timing", node.lineno, mod.text(node.lineno),
                                           severity="warning"))

    _GUARDED = ("torch", "time", "timeit", "builtins", "sys", "gc", "inspect", "kernelbench", "stitch_mcp",
                "triton", "numpy", "os", "importlib")

    def check_harness(self) -> None:
        a, mod = self.a, self.mod
        for node in ast.walk(mod.tree):
            targets: list[ast.AST] = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "setattr", "delattr") and node.args:
                d = mod.resolve(_dotted(node.args[0]))
                if d.split(".")[0] in self._GUARDED:
                    a.findings.append(_finding("harness_patch", "certain",
                                               f"{node.func.id} on `{d}`: patching torch, timers or the harness",
                                               node.lineno, mod.text(node.lineno)))
                continue
            for t in targets:
                if isinstance(t, ast.Subscript) and mod.resolve(_dotted(t.value)) in ("sys.modules", "os.environ"):
                    a.findings.append(_finding("harness_patch", "certain" if "modules" in _dotted(t.value) else
                                               "probable", f"writes {mod.resolve(_dotted(t.value))}", node.lineno,
                                               mod.text(node.lineno)))
                    continue
                if not isinstance(t, ast.Attribute):
                    continue
                d = mod.resolve(_dotted(t))
                head = d.split(".")[0]
                if head not in self._GUARDED:
                    continue
                if d.startswith(("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
                                 "torch.backends.cuda.matmul.allow_fp16", "torch.backends.cuda.matmul.allow_bf16")):
                    if not self._ref_low_precision():
                        a.findings.append(_finding("precision_downgrade", "probable",
                                                   f"sets {d}: a silent precision drop on an fp32 task",
                                                   node.lineno, mod.text(node.lineno), severity="warning"))
                    continue
                if d.startswith(("torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic")):
                    continue
                a.findings.append(_finding("harness_patch", "certain",
                                           f"assigns `{d}`: patching torch, timers or the harness is tampering",
                                           node.lineno, mod.text(node.lineno)))

    def _ref_low_precision(self) -> bool:
        return bool(re.search(r"float16|bfloat16|\.half\(\)|\bhalf\b", self.ref_src))

    def check_streams_py(self) -> None:
        a, mod = self.a, self.mod
        creates, joins = [], []
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call):
                d = mod.resolve(_dotted(node.func))
                if d in ("torch.cuda.Stream", "torch.cuda.streams.Stream"):
                    creates.append(node.lineno)
                last = d.rsplit(".", 1)[-1]
                if last in ("wait_stream", "synchronize", "wait_event", "query") or d.endswith("current_stream()."
                                                                                             "wait_stream"):
                    joins.append(node.lineno)
                if d in ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables"):
                    if not any(t.key == "cuda_graphs" for t in a.techniques):
                        a.techniques.append(Technique("cuda_graphs", TECHNIQUE_LABELS["cuda_graphs"], node.lineno,
                                                      mod.text(node.lineno)))
        if creates and not joins:
            a.findings.append(_finding("unjoined_stream", "certain",
                                       "work goes to a private torch.cuda.Stream that is never joined back to the "
                                       "current stream: a timer on the current stream does not see it",
                                       creates[0], mod.text(creates[0])))
        elif creates:
            a.techniques.append(Technique("joined_streams", TECHNIQUE_LABELS["joined_streams"], creates[0],
                                          mod.text(creates[0])))

    def check_precision(self, fns: list[ast.FunctionDef]) -> None:
        if self._ref_low_precision():
            return
        a, mod = self.a, self.mod
        for fn in fns:
            for node in self.host_nodes(fn):
                hit = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in PRECISION_CASTS:
                    hit = node.func.attr
                elif isinstance(node, ast.Attribute) and mod.resolve(_dotted(node)) in (
                        "torch.float16", "torch.half", "torch.bfloat16"):
                    hit = _dotted(node)
                elif isinstance(node, ast.Call) and mod.resolve(_dotted(node.func)).endswith("autocast"):
                    hit = "autocast"
                if hit:
                    a.findings.append(_finding("precision_downgrade", "probable",
                                               f"forward converts to lower precision ({hit}) on an fp32 task",
                                               node.lineno, mod.text(node.lineno), severity="warning"))
                    return


def _fallback_findings(a: Analysis, ref_ops: list[tuple[str, float]]) -> None:
    """PyTorch compute in forward and ATen compute in C++ -> fallback findings."""
    ref_share = dict(ref_ops)
    top = max(ref_ops, key=lambda x: x[1])[0] if ref_ops else None
    if a.has_modelnew and not a.custom_calls:
        if a.torch_ops:
            o = a.torch_ops[0]
            a.findings.append(_finding(
                "pytorch_fallback", "certain",
                f"forward computes with PyTorch ({', '.join(sorted({x.call for x in a.torch_ops})[:4])}) and calls "
                "no custom kernel", o.line, o.text))
        elif not a.aten_ops:
            a.findings.append(_finding("no_custom_kernel", "probable",
                                       "forward calls no custom kernel the analysis can find", None, ""))
    elif a.torch_ops and a.custom_calls:
        shown = set()
        for o in a.torch_ops:
            if o.op in shown:
                continue
            shown.add(o.op)
            in_ref = o.op in ref_share
            share = ref_share.get(o.op, 0.0)
            if in_ref and (o.op == top or share >= 0.5):
                conf, sev = "probable", "warning"
                msg = (f"forward still runs the reference's main op `{o.op}` in PyTorch ({o.call}, "
                       f"{share:.0%} of the reference's time) next to the custom kernel")
            elif in_ref:
                conf, sev = "possible", "info"
                msg = f"forward still runs reference op `{o.op}` in PyTorch ({o.call}); it is not covered"
            else:
                continue
            a.findings.append(_finding("partial_fallback", conf, msg, o.line, o.text, severity=sev))
    for o in a.aten_ops:
        conf = "certain" if "::" in o.call else "probable"
        a.findings.append(_finding("aten_fallback", conf,
                                   f"the C++ source calls PyTorch compute `{o.call}`: a PyTorch fallback inside the "
                                   "extension (call cuBLAS/cuDNN/CUTLASS directly, or write the kernel)",
                                   o.line, o.text, severity="error" if conf == "certain" else "warning"))


def _regex_sources(source: str) -> list[CudaSource]:
    """Triple-quoted strings that look like C++, for a program that does not parse."""
    out = []
    for m in re.finditer(r"(?:[rRbBuU]{0,2})(\"\"\"|''')(.*?)\1", source, re.S):
        if looks_like_cxx(m.group(2)):
            out.append(CudaSource(m.group(2), source.count("\n", 0, m.start(2)) + 1))
    return out


def _merge_cxx(a: Analysis, ref_low_precision: bool) -> None:
    joins_anywhere = False
    creates: list[int] = []
    for src in a.sources:
        f = analyze_cxx(src)
        if f.kernels or f.launches or _CUDA_TEXT.search(src.text):
            a.gpu_code = True
        else:
            a.cpu_loop_nests += f.outer_loops
        a.kernels.extend(k for k in f.kernels if k not in a.kernels)
        a.launches += len(f.launches)
        a.aten_ops.extend(f.aten)
        a.aten_ops.extend(f.aten_methods)
        for name, line in f.libraries.items():
            a.libraries.setdefault(name, line)
        for t in f.techniques:
            if t.key not in a.technique_keys():
                a.techniques.append(t)
        creates += f.stream_creates
        joins_anywhere |= bool(f.stream_joins)
        if f.tf32 and not ref_low_precision:
            a.findings.append(_finding("precision_downgrade", "probable",
                                       "asks cuBLAS/cuDNN for TF32/fp16 math on an fp32 task", f.tf32[0], "",
                                       severity="warning", file=PY))
        for line in f.tensor_caches:
            a.findings.append(_finding(
                "output_cache", "probable", "the C++ keeps tensors in a static container across calls: outputs "
                "can be replayed (a static cache of plans, handles, descriptors or algorithms keyed on the shape is "
                "fine; of tensors it is not)", line, "", severity="warning"))
        if f.tf32_mma and not ref_low_precision:
            if f.split_tf32:
                a.notes.append(f"line {f.tf32_mma[0]}: TF32 tensor cores with a 3xTF32 split (fp32-accurate)")
            else:
                a.findings.append(_finding(
                    "tf32_tensor_cores", "possible",
                    "TF32 tensor-core math on an fp32 task keeps 10 mantissa bits: the rules call plain TF32 a "
                    "precision downgrade. Keep fp32 accuracy with 3xTF32 (split each operand into a TF32 high part "
                    "and a TF32 residual, sum the three significant products) or use fp32 FMA",
                    f.tf32_mma[0], "", severity="warning", file=PY, doc_id="card:tensor-cores"))
    if creates and not joins_anywhere:
        a.findings.append(_finding("unjoined_stream", "certain",
                                   "the C++ source creates a private CUDA stream and never synchronizes or joins it "
                                   "to PyTorch's current stream: a timer on the current stream sees nothing",
                                   creates[0], ""))
    elif creates and "joined_streams" not in a.technique_keys():
        a.techniques.append(Technique("joined_streams", TECHNIQUE_LABELS["joined_streams"], creates[0], ""))


def reference_ops(reference_source: str) -> list[tuple[str, float, int | None]]:
    """Compute ops of a reference's Model.forward with a static weight (gemm 10, reduction 3,
    elementwise 1): (canonical op, weight, line)."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return []
    an = _PyAnalyzer(_Module(tree, reference_source), None, is_reference=True)
    a = an.run()
    out: dict[str, tuple[float, int | None]] = {}
    for o in a.torch_ops:
        w, line = out.get(o.op, (0.0, o.line))
        out[o.op] = (w + op_weight(o.op), line)
    return [(k, w, line) for k, (w, line) in out.items()]


def analyze_candidate(source: str, reference_source: str | None = None,
                      ref_shares: list[tuple[str, float]] | None = None) -> Analysis:
    """Everything rubric_score needs to know statically about a candidate.

    ref_shares: (canonical op, share of the reference's GPU time), from a profile or the static
    estimate; used to judge how serious a remaining PyTorch op is.
    """
    if ref_shares is None and reference_source:
        ops = reference_ops(reference_source)
        total = sum(w for _, w, _ in ops) or 1.0
        ref_shares = [(op, w / total) for op, w, _ in ops]
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        a = Analysis(parsed=False, parse_error=f"line {exc.lineno}: {exc.msg}")
        a.sources = _regex_sources(source)
        _merge_cxx(a, bool(reference_source and re.search(r"float16|bfloat16", reference_source)))
        a.findings.insert(0, _finding(
            "unparseable", "probable",
            f"the candidate is not valid Python ({a.parse_error}); anti-hacking cannot be cleared because "
            "forward cannot be read", exc.lineno, (exc.text or "").strip(), severity="error"))
        return a
    an = _PyAnalyzer(_Module(tree, source), reference_source)
    a = an.run()
    if not a.has_modelnew:
        a.findings.append(_finding("no_modelnew", "probable", "no class ModelNew: nothing to check",
                                   None, "", severity="warning"))
    a.ref_low_precision = an._ref_low_precision()
    _merge_cxx(a, a.ref_low_precision)
    _fallback_findings(a, ref_shares or [])
    return a
