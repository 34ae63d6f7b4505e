"""What the analysis reports: the ops and techniques it finds (with the candidate's line), the
C++/CUDA sources it reads, the Analysis that holds them, and the finding helper."""

from __future__ import annotations

from dataclasses import dataclass, field

from stitch_mcp.models import Evidence, Finding

PY = "candidate.py"

# Python kernel languages (technique keys); a candidate written only in these targets "dsl"
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


def finding(code: str, confidence: str, message: str, line: int | None = None, text: str = "",
            severity: str = "error", file: str = PY, doc_id: str | None = None) -> Finding:
    """A Finding with the candidate's line and text as evidence (none when neither is known)."""
    ev = [Evidence(file=file, line=line, text=text.strip()[:200])] if (line or text) else []
    return Finding(code=code, severity=severity, confidence=confidence, message=message, evidence=ev,
                   doc_id=doc_id)

