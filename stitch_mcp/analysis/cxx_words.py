"""C++/CUDA identifiers and what they mean: the libraries (cuBLAS, cuDNN, CUTLASS, ...), ATen glue,
stream calls, TF32 switches, and the technique one word, pragma or qualified name shows by itself."""

from __future__ import annotations

import re

from stitch_mcp.analysis.ops import GLUE

# libraries by identifier prefix and by namespace
LIB_PREFIXES = [("cublasLt", "cuBLASLt"), ("cublas", "cuBLAS"), ("cudnn", "cuDNN"), ("CUBLASLT_", "cuBLASLt"),
                ("CUBLAS_", "cuBLAS"), ("CUDNN_", "cuDNN")]
_LIB_NAMESPACES = {"cutlass": "CUTLASS", "cute": "CUTLASS", "cub": "CUB", "thrust": "Thrust",
                   "cublasdx": "cuBLASDx"}
# ATen names that are glue, not compute, when C++ calls them
ATEN_GLUE = GLUE | {"Tensor", "TensorOptions", "ScalarType", "IntArrayRef", "Scalar", "Device", "DeviceGuard",
                    "kFloat", "kFloat32", "kHalf", "kBFloat16", "kCUDA", "kInt", "kLong", "dtype", "from_blob",
                    "getCurrentCUDAStream", "getCurrentCUDABlasHandle", "getCurrentCUDABlasLtHandle",
                    "CUDAGuard", "OptionalCUDAGuard", "CUDAStreamGuard", "getStreamFromPool",
                    "getDefaultCUDAStream", "getCurrentDeviceProperties", "stream_synchronize"}
# streams: created, joined (synchronised or waited on), PyTorch's current one
STREAM_CREATE = {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                 "getStreamFromPool"}
STREAM_JOIN = {"cudaStreamSynchronize", "cudaStreamWaitEvent", "cudaDeviceSynchronize", "cudaEventSynchronize",
               "synchronize", "stream_synchronize", "wait_stream"}
CURRENT_STREAM = {"getCurrentCUDAStream", "getDefaultCUDAStream"}
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
# TF32 tensor-core math written in a kernel, and the 3xTF32 split that keeps it fp32-accurate
TF32_MMA = re.compile(r"^(__float_to_tf32|OpMultiplyAddFastF32|tfloat32_t|tf32)$")
SPLIT_TF32 = re.compile(r"(?i)3x_?tf32|tf32_?x3|split_?tf32|tf32_?split|FastF32")
_CACHE_HINTS = {"__ldg", "__ldcs", "__ldcg", "__ldca", "__ldlu", "__ldcv", "__stcs", "__stcg", "__stwt",
                "__stwb", "__prefetch_global_l2"}
# cuBLAS / cuDNN modes that compute an fp32 product in TF32, fp16 or bf16
TF32 = {"CUBLAS_COMPUTE_32F_FAST_TF32", "CUBLAS_TF32_TENSOR_OP_MATH", "CUBLAS_COMPUTE_32F_FAST_16F",
        "CUBLAS_COMPUTE_32F_FAST_16BF", "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION"}

# Evidence of CUDA in a C++ source (as opposed to C++ written for the CPU)
CUDA_TEXT = re.compile(r"__global__|__device__|<<<|\bcuda[A-Z_]\w*|\bcu[A-Z]\w*\(|ATen/cuda|c10/cuda|cuda_runtime|"
                       r"\bcublas|\bcudnn|\bcutlass|\bcute::|kittens|\bthrust::|\bcub::|blockIdx|threadIdx")

# library -> its technique key
LIBRARY_TECHNIQUE = {"cuBLAS": "cublas", "cuBLASLt": "cublaslt", "cuDNN": "cudnn", "CUTLASS": "cutlass", "CUB": "cub",
                     "Thrust": "thrust", "cuBLASDx": "cublas", "ThunderKittens": "thunderkittens"}


def pragma_techniques(text: str) -> list[str]:
    """The techniques a `#pragma` line asks for (unrolling, OpenMP threads, SIMD)."""
    keys = []
    if re.match(r"\s*#\s*pragma\s+unroll", text):
        keys.append("loop_unrolling")
    if re.match(r"\s*#\s*pragma\s+omp\s+(parallel|for|taskloop)", text):
        keys.append("cpu_threads")
    if re.match(r"\s*#\s*pragma\s+(omp\s+(parallel\s+for\s+)?simd|GCC\s+ivdep|clang\s+loop\s+vectorize|GCC\s+unroll)",
                text) or re.search(r"\bsimd\b", text) and "omp" in text:
        keys.append("cpu_simd")
    return keys


def id_technique(v: str, prev: str) -> str | None:
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


def namespace_facts(parts: list[str]) -> tuple[str | None, str | None]:
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
