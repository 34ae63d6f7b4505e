"""Python kernel languages (Triton, CuTe DSL, TileLang, Numba, CuPy, cuda-python, jiterator, the
compiled extension): which decorators mark a kernel, which calls build or launch one, which calls
show a technique, and what to install when a candidate's language is missing."""

from __future__ import annotations

import re

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


_EXT_LOADERS = ("load_inline", "load", "RawKernel", "RawModule", "SourceModule", "get_function", "compile",
                "ElementwiseKernel", "ReductionKernel", "jit", "get_kernel", "_create_jit_fn",
                "_create_multi_output_jit_fn", "cuModuleGetFunction", "cuLibraryGetKernel")
# packages whose compile()/jit()/get_kernel() build a GPU kernel the candidate wrote
_BUILDER_PACKAGES = ("cpp_extension", "cupy", "nvrtc", "numba", "tilelang", "cutlass", "triton", "jiterator",
                     "cuda.core", "cuda.bindings", "cuda.cuda", "pycuda")
# calls that launch a kernel built by the candidate (cuda-python driver API, cuda.core)
LAUNCHERS = ("cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel")


def is_ext_loader(resolved: str) -> bool:
    """Whether a call to `resolved` (a dotted name) compiles or loads a kernel the candidate wrote."""
    last = resolved.rsplit(".", 1)[-1]
    if last not in _EXT_LOADERS:
        return False
    if last in ("load_inline", "RawKernel", "RawModule", "SourceModule", "ElementwiseKernel", "ReductionKernel",
                "get_function", "_create_jit_fn", "_create_multi_output_jit_fn", "cuModuleGetFunction",
                "cuLibraryGetKernel"):
        return True
    if last == "load":  # torch.utils.cpp_extension.load, never triton.language.load or torch.load
        return "cpp_extension" in resolved
    return any(p in resolved for p in _BUILDER_PACKAGES) and not resolved.startswith("triton.language")


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
DSL_TECHNIQUES = [
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
