"""The CUDA headers a CPU host lacks, for the compile-only check of a CUDA extension (no
CUDA-enabled torch here): the two headers a CUDA build of torch generates and the CUDA library
headers ATen/cuda includes come from the host's toolkit or NVIDIA's pip wheels, else from
stand-ins (`host_cuda_headers`), so the check reaches the candidate's own code; what it could not
check (a call into a library this host has no headers for: `beyond_this_host`) is a note, not a
compile error.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.build.cache import _header_dir
from stitch_mcp.build.diagnostics import _MISSING_DECLARATION, _error_blocks

# a header the compiler could not find, in an error's message (gcc, nvcc)
_MISSING_HEADER = re.compile(r'^([\w./+-]+\.h(?:pp)?): No such file or directory'
                             r'|cannot open source file "([\w./+-]+\.h(?:pp)?)"')

# A CPU build of torch ships ATen/cuda and c10/cuda but not the two headers its CUDA build
# generates; values for a compile-only check (no cuDNN, cuSPARSELt, MAGMA or ROCm: objects
# compiled against them are never linked or run).
_GENERATED_TORCH_CUDA_HEADERS = {
    "c10/cuda/impl/cuda_cmake_macros.h": "#define C10_CUDA_BUILD_SHARED_LIBS\n",
    "ATen/cuda/CUDAConfig.h": "".join(f"#define {m}() 0\n" for m in (
        "AT_CUDNN_ENABLED", "AT_CUSPARSELT_ENABLED", "AT_HIPSPARSELT_ENABLED", "AT_ROCM_ENABLED", "AT_MAGMA_ENABLED",
        "AT_CUDSS_ENABLED")) + '#define NVCC_FLAGS_EXTRA ""\n',
}
# The CUDA library headers that ATen/cuda/CUDAContextLight.h and ATen/cuda/Exceptions.h include,
# each with what those torch headers declare with it (handles, status codes); a host whose CUDA
# install lacks the libraries (nvcc alone, no nvidia-* wheels) gets these declarations instead.
_LIBRARY_DECLARATIONS = {
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t;\n"
                  "typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;\n"
                  "const char* cusparseGetErrorString(cusparseStatus_t status);\n",
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t;\n"
                   "typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n",
    "cublasLt.h": "#include <cublas_v2.h>\ntypedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusolver_common.h": "typedef enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_INVALID_VALUE = 3 } "
                         "cusolverStatus_t;\n",
    "cusolverDn.h": "#include <cusolver_common.h>\ntypedef struct cusolverDnContext* cusolverDnHandle_t;\n",
}
# Headers and names of NVIDIA's CUDA libraries (not of the CUDA runtime nvcc always has): a
# candidate that includes one this host lacks, or calls a function the stand-ins above do not
# declare, compiled as far as this host allows; the GPU machine has them.
_LIBRARY_HEADER = re.compile(r"(?:cublas|cublasLt|cusparse|cusparseLt|cusolver|cufft|curand|cudnn|nvrtc|nccl|cutensor|"
                             r"cudss|nvjpeg|npp|cufile|nvml)\w*\.h")
_LIBRARY_NAME = re.compile(r"\b(?:cublas|cusparse|cusolver|cufft|curand|cudnn|nvrtc|nccl|cutensor|cudss)[A-Z]\w*"
                           r"|\b(?:CUBLAS|CUSPARSE|CUSOLVER|CUFFT|CURAND|CUDNN|NVRTC|NCCL|CUTENSOR)_\w+")


def _toolkit_include_dirs() -> list[Path]:
    """Where this host keeps CUDA headers: the toolkit nvcc belongs to and NVIDIA's pip wheels
    (nvidia-cusparse-cu12 puts its headers in site-packages/nvidia/cusparse/include, the cu13
    wheels in site-packages/nvidia/cu13/include)."""
    roots = [os.environ.get(k, "") for k in ("CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
        try:  # a wrapper script (`exec /usr/local/cuda-13.0/bin/nvcc "$@"`) names the real one
            roots += [str(Path(m).parent.parent) for m in re.findall(r"(/\S+)/nvcc\b", Path(nvcc).read_text()[:4096])]
        except (OSError, UnicodeDecodeError):
            pass
    roots.append("/usr/local/cuda")
    dirs = [d for r in roots if r for d in (Path(r) / "include", *Path(r).glob("targets/*/include"))]
    for site in {Path(p).parent for p in sys.path if p.endswith("site-packages")} | {Path(shutil.__file__).parent}:
        dirs += sorted(site.glob("site-packages/nvidia/*/include"))
    return [d for d in dict.fromkeys(dirs) if d.is_dir()]


@dataclass
class HostCudaHeaders:
    """Include flags that let a CPU host compile a CUDA source against torch's CUDA headers:
    the folders (toolkit, pip wheels) that hold CUDA library headers, then a folder of stand-ins
    for what is still missing."""

    flags: list[str]
    stood_in: list[str]  # CUDA library headers declared by stand-ins (their libraries are not checked here)


def host_cuda_headers(root: Path) -> HostCudaHeaders:
    from torch.utils.cpp_extension import include_paths

    torch_include = Path(include_paths()[0])
    dirs = _toolkit_include_dirs()
    files = {rel: f"#pragma once\n// stitch-mcp: generated by a CUDA build of torch; see host_cuda_headers\n{text}"
             for rel, text in _GENERATED_TORCH_CUDA_HEADERS.items() if not (torch_include / rel).is_file()}
    stood_in = [h for h in _LIBRARY_DECLARATIONS if not any((d / h).is_file() for d in dirs)]
    for h in stood_in:
        files[h] = ("#pragma once\n// stitch-mcp: this host has no such CUDA library header; the declarations\n"
                    f"// that torch's CUDA headers use, for a compile-only check (see host_cuda_headers)\n"
                    f"{_LIBRARY_DECLARATIONS[h]}")
    having = [d for d in dirs if any((d / h).is_file() for h in _LIBRARY_DECLARATIONS)]  # the host compiler too
    flags = [f for d in having for f in ("-isystem", str(d))]
    if files:
        flags += ["-isystem", str(_header_dir(root, files, "cuda_host_headers"))]
    return HostCudaHeaders(flags=flags, stood_in=stood_in)


def beyond_this_host(compiler_output: str, stood_in: list[str]) -> list[str]:
    """What stopped a compile-only check that a GPU machine has: CUDA library headers this host
    lacks, or names of a library whose headers stood in. Empty when any error is something else
    (the candidate's code, or torch's headers failing for another reason)."""
    blocks = _error_blocks(compiler_output)
    if not blocks:
        return []
    found = []
    for block in blocks:
        missing = [a or b for a, b in _MISSING_HEADER.findall(block.partition("\t")[2])]
        if missing and all(_LIBRARY_HEADER.fullmatch(Path(h).name) for h in missing):
            found += missing
            continue
        names = _LIBRARY_NAME.findall(block)
        if stood_in and names and _MISSING_DECLARATION.search(block):
            found += names
            continue
        return []
    return sorted(set(found))
