"""Building candidates' extensions: a content-addressed cache around `torch.utils.cpp_extension`.

KernelBench candidates call `load_inline(name, cpp_sources, cuda_sources, functions, ...)` when
they are imported. Inside a candidate room (stitch_mcp.room), `BuildCache.install` replaces
`load_inline` and `load` with wrappers that

- import an extension the room was handed as an open file (`prebuilt`: built earlier for the same
  candidate source, copied into its cache scope by the trusted side, stitch_mcp.build_room);

- key each extension by a hash of its sources, flags, options, torch/CUDA/Python versions, the
  compiler and the GPU architecture, and import an already-built `.so` straight from the cache
  (`objects/<key>/`), so a resubmitted candidate costs no compile and no ninja run;
- otherwise build in a *stable* directory keyed by the binding translation unit only (the
  `cpp_sources`, `functions`, flags and environment, not the CUDA kernel), under a module name
  derived from that key rather than the candidate's: when a candidate changes only its kernel, ninja
  finds `main.cpp` (the pybind binding that includes all of torch/extension.h) unchanged and
  recompiles only `cuda.cu`, whatever name the candidate gave its extension;
- serialise builds of one directory with an `flock` (released when a worker dies), so any `lock`
  file that cpp_extension left behind in a directory we hold is stale and is removed (a crashed
  build otherwise makes every later `load_inline` wait forever); a build that finds the stable
  directory busy builds in a directory of its own instead of waiting;
- compile each translation unit against as little of torch as it needs: torch/extension.h brings
  the C++ frontend, pybind11 and the declarations of all ~2,000 ATen operators, which kernels,
  their host wrappers and bindings rarely use, and nvcc parses it three times (host front end,
  device front end, host compiler). First rung: the Tensor class and ATen's per-operator headers
  for the operators the source names (plus torch's pybind11 casters in the binding, main.cpp);
  then torch/types.h (kernel file); then the real header. A unit whose build fails in a way a
  missing torch declaration can cause (`lacks_torch_declaration`: a torch type or name in the
  error, not only "undeclared") climbs a rung (`kernel_header_rungs`, `binding_header_rungs`); a
  syntax error or a name of the candidate's own does not;
- parse compiler output into diagnostics mapped back to the candidate's own lines;
- without a CUDA-enabled torch (the CPU path) compile CUDA sources to objects with nvcc (and the
  binding with the host compiler) to report real compiler diagnostics, then stop with NeedsGPU.
  The CUDA headers a CPU host lacks (the two a CUDA build of torch generates, the CUDA library
  headers ATen/cuda includes) come from the host's toolkit or NVIDIA's pip wheels, else from
  stand-ins (`host_cuda_headers`), so the check reaches the candidate's own code; what it could
  not check (a call into a library this host has no headers for) is a note, not a compile error,
  and the check is cached like a build.

Parent-side helpers (the manifest of a candidate's extension keys) need no torch.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE_VERSION = "1"


# a header the compiler could not find, in an error's message (gcc, nvcc)
_MISSING_HEADER = re.compile(r'^([\w./+-]+\.h(?:pp)?): No such file or directory'
                             r'|cannot open source file "([\w./+-]+\.h(?:pp)?)"')


# What torch/extension.h adds to torch/types.h: a source naming any of these is compiled with the
# real header from the start (a binding file, which is pybind11 code, only for the frontend part).
_FRONTEND_NEEDS = re.compile(
    r"TORCH_LIBRARY|\bTHP|torch/(?:torch|all|python|nn|optim|jit|data|serialize|autograd)\.h"
    r"|torch::(?:nn|optim|jit|data|serialize|autograd|cuda|fft|linalg|special|nested|sparse|utils|mps|xpu|python"
    r"|save|load|enumtype|print)\b")
_PYTHON_NEEDS = re.compile(r"pybind11|PYBIND11|\bpy::")
# torch/types.h's factory functions honour requires_grad(true) (autograd's variable factories); ATen's
# refuse it: a source asking for it skips the per-operator rung.
_AUTOGRAD_NEEDS = re.compile(r"requires_grad|torch::autograd|\bVariable\b")
# Errors a missing declaration gives (nvcc's front end and gcc), and the names they quote
_MISSING_DECLARATION = re.compile(r"is undefined|is not a member|has no member|not declared|does not name a"
                                  r"|incomplete type|no instance of|no matching function|has not been declared")
_QUOTED = re.compile(r"[\"'\u2018]([^\"'\u2019]+)[\"'\u2019]")
_NAMESPACED = re.compile(r"\b(?:torch|at)::(\w+)")
# torch/types.h's own names in namespace torch (besides `using namespace at`)
_TORCH_DTYPE_ALIASES = {
    "kUInt8": "at::kByte", "kInt8": "at::kChar", "kInt16": "at::kShort", "kInt32": "at::kInt", "kInt64": "at::kLong",
    "kUInt16": "at::kUInt16", "kUInt32": "at::kUInt32", "kUInt64": "at::kUInt64", "kFloat16": "at::kHalf",
    "kFloat32": "at::kFloat", "kFloat64": "at::kDouble", "kU8": "at::kByte", "kU16": "at::kUInt16",
    "kU32": "at::kUInt32", "kU64": "at::kUInt64", "kI8": "at::kChar", "kI16": "at::kShort", "kI32": "at::kInt",
    "kI64": "at::kLong", "kF16": "at::kHalf", "kF32": "at::kFloat", "kF64": "at::kDouble"}
# what a binding needs besides the tensor API: torch's pybind11 casters and wrap_pybind_function
BINDING_INCLUDES = "#include <torch/csrc/utils/pybind.h>\n#include <torch/csrc/Exceptions.h>\n"
TYPES_EXTENSION_H = """#pragma once
// stitch-mcp's stand-in for torch/extension.h in a kernel translation unit (cuda.cu), found
// before the real one: ATen, c10 and torch's tensor API without the C++ frontend and pybind11,
// which nvcc would otherwise parse three times. See stitch_mcp/build.py.
#include <torch/types.h>
"""


def wants_full_header(cuda_sources: list[str]) -> bool:
    """Whether kernel sources use what torch/extension.h adds to torch/types.h."""
    return any(_FRONTEND_NEEDS.search(s) or _PYTHON_NEEDS.search(s) for s in cuda_sources)


# ATen/ops/NAME.h includes these for any caller's convenience, though its inline definitions only
# call at::_ops::NAME::call (in NAME_ops.h); DeviceGuard.h alone is a third of a kernel file's
# compile. The stand-ins drop them, and include one back when the source names what it declares
# (a name missed here is still a missing torch declaration: the build climbs a rung).
_ASIDE_HEADERS = {
    "ATen/Context.h": re.compile(r"\bglobalContext\b|\bContext\b|\bget\w*Hooks\b|\bhas(?:CUDA|CuDNN|CuBLASLt|MPS|XPU|"
                                 r"HIP|LAPACK|MKL|MAGMA|OpenMP|MKLDNN)\b|\bNoTF32Guard\b|\bdeterministic\w*\("),
    "ATen/DeviceGuard.h": re.compile(r"\bdevice_of\b|DeviceGuard\b"),
    "ATen/TensorUtils.h": re.compile(r"\bTensor(?:Geometry)?Arg\b|\bcheck(?:Dim|Size|Numel|Same|All|Contiguous|Scalar|"
                                     r"Defined|Backend|DeviceType|Layout|IntRange|OnCPU)\w*\s*\("),
    "ATen/TracerMode.h": re.compile(r"\bTracer\w*|\btracer\b"),
}
# ATen/cuda/CUDAContext.h less ATen/Context.h (through ATen/cuda/Exceptions.h): the stream, the
# device properties and library handles, C10_CUDA_CHECK; AT_CUDA_CHECK and friends put it back.
_CUDA_CONTEXT_NEEDS = re.compile(r"\b(?:AT_CUDA|TORCH_CU(?:DABLAS|SPARSE|SOLVER|DSS)|TORCH_NVRTC)\w*")
_CUDA_CONTEXT = ("#pragma once\n// stitch-mcp: ATen/cuda/CUDAContext.h without ATen/Context.h; see stitch_mcp/build.py\n"
                 "#include <ATen/cuda/CUDAContextLight.h>\n#include <c10/cuda/CUDAStream.h>\n"
                 "#include <c10/cuda/CUDAException.h>\n#include <c10/util/Logging.h>\n")


def per_operator_headers(sources: list[str], ops_dir: Path, extra: str = "") -> dict[str, str]:
    """Stand-ins for torch/extension.h, torch/types.h and ATen/ATen.h: the Tensor class with its
    methods, and ATen's per-operator header (ATen/ops/NAME.h, what PyTorch's own build uses to keep
    compiles small) for each `torch::NAME` / `at::NAME` the sources call, instead of the
    declarations of all ~2,000 operators; each ATen/ops/NAME.h itself a copy less the headers in
    _ASIDE_HEADERS, and ATen/cuda/CUDAContext.h less ATen/Context.h. {relative path: text}"""
    text = "\n".join(sources)
    names = set(_NAMESPACED.findall(text))
    if re.search(r"using\s+namespace\s+(?:torch|at)\s*;", text):  # unqualified calls may be operators
        names |= set(re.findall(r"\b([a-z_]\w*)\s*\(", text))
    # the Tensor operators (+ - * / % & | ^ and comparisons, ATen/TensorOperators.h) need only
    # empty_like beside the Tensor class: wrappers use them everywhere (`return out / (float)n;`)
    ops = sorted({"empty_like"} | {n for n in names if (ops_dir / f"{n}.h").is_file()})
    aside = [h for h, used in _ASIDE_HEADERS.items() if used.search(text)]
    lines = ["#pragma once", "// stitch-mcp: ATen's per-operator headers for what this file calls;",
             "// see per_operator_headers in stitch_mcp/build.py", "#include <ATen/core/Tensor.h>",
             "#include <optional>", *(f"#include <{h}>" for h in aside)]
    if "AT_DISPATCH" in text:
        lines.append("#include <ATen/Dispatch.h>")
    if "indexing::" in text:
        lines.append("#include <ATen/TensorIndexing.h>")
    lines += [f"#include <ATen/ops/{n}.h>" for n in ops]
    lines.append("#include <ATen/TensorOperators.h>")
    lines += ["namespace torch {", "using namespace at;  // NOLINT", "using std::nullopt;", "using std::optional;",
              "using Dtype = at::ScalarType;"]
    lines += [f"constexpr auto {k} = {v};" for k, v in _TORCH_DTYPE_ALIASES.items()]
    lines.append("}  // namespace torch")
    header = "\n".join(lines) + "\n" + extra
    files = dict.fromkeys(("torch/extension.h", "torch/types.h", "ATen/ATen.h"), header)
    drop = re.compile(r"^#include <(?:%s)>\n" % "|".join(map(re.escape, set(_ASIDE_HEADERS) - set(aside))), re.M)
    for n in ops:
        files[f"ATen/ops/{n}.h"] = drop.sub("", (ops_dir / f"{n}.h").read_text())
    operators = (ops_dir.parent / "TensorOperators.h").read_text()  # its per-operator branch, always
    files["ATen/TensorOperators.h"] = re.sub(r"#ifndef AT_PER_OPERATOR_HEADERS\n.*?#else\n(.*?)#endif\n", r"\1",
                                             operators, count=1, flags=re.S)
    if not _CUDA_CONTEXT_NEEDS.search(text) and "ATen/Context.h" not in aside:
        files["ATen/cuda/CUDAContext.h"] = _CUDA_CONTEXT
    return files


def _write_atomically(path: Path, text: str) -> None:
    """Readers (other workers building at the same time) see the whole file or none of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _header_dir(root: Path, files: dict[str, str], kind: str = "kernel_headers") -> Path:
    """A folder of stand-in headers, named by their content (written once)."""
    folder = root / kind / _sha(files)[:16]
    for rel, text in files.items():
        if not (folder / rel).exists():
            _write_atomically(folder / rel, text)
    return folder


def kernel_header_rungs(root: Path, cuda_sources: list[str]) -> list[tuple[str, Path | None]]:
    """What a kernel translation unit is compiled against, lightest first: (label, folder of
    stand-ins found before torch's own headers; None: torch's headers). A build that misses a
    torch declaration (`lacks_torch_declaration`) climbs to the next rung."""
    if wants_full_header(cuda_sources):
        return [("torch/extension.h", None)]
    rungs: list[tuple[str, Path | None]] = []
    ops_dir = _aten_ops_dir()
    if not any(_AUTOGRAD_NEEDS.search(s) for s in cuda_sources) and ops_dir.is_dir():
        rungs.append(("ATen per-operator", _header_dir(root, per_operator_headers(cuda_sources, ops_dir))))
    rungs.append(("torch/types.h", _header_dir(root, {"torch/extension.h": TYPES_EXTENSION_H})))
    rungs.append(("torch/extension.h", None))
    return rungs


def binding_header_rungs(root: Path, cpp_sources: list[str]) -> list[tuple[str, Path | None]]:
    """The same for the binding translation unit (main.cpp: the candidate's cpp_sources and the
    PYBIND11_MODULE that load_inline adds), compiled by the host compiler: ATen's per-operator
    headers plus torch's pybind11 type casters, else the real torch/extension.h (whose C++
    frontend is most of its compile)."""
    full = ("torch/extension.h", None)
    ops_dir = _aten_ops_dir()
    if any(_FRONTEND_NEEDS.search(s) or _AUTOGRAD_NEEDS.search(s) for s in cpp_sources) or not ops_dir.is_dir():
        return [full]
    return [("ATen per-operator", _header_dir(root, per_operator_headers(cpp_sources, ops_dir, BINDING_INCLUDES))),
            full]


def _failed_units(ninja_output: str) -> dict[str, str]:
    """The compiler output of each failed translation unit in a ninja log ('binding': main.cpp,
    'kernel': cuda.cu); the whole text for both when no unit can be told apart."""
    units: dict[str, str] = {}
    current = None
    for line in ninja_output.splitlines():
        if line.startswith("FAILED:"):
            current = "kernel" if ".cuda.o" in line else "binding" if "main.o" in line else None
            continue
        if line.startswith(("[", "ninja: ")):
            current = None
        if current:
            units[current] = units.get(current, "") + line + "\n"
    return units or {"binding": ninja_output, "kernel": ninja_output}


class HeaderRungs:
    """Where each translation unit of one extension stands on its ladder of headers: 'binding'
    (main.cpp, host compiler) and 'kernel' (cuda.cu, nvcc; none without CUDA sources)."""

    def __init__(self, root: Path, cpp: list[str], cuda: list[str], with_cuda: bool = True):
        self.ladders = {"binding": binding_header_rungs(root, cpp),
                        "kernel": kernel_header_rungs(root, cuda) if with_cuda else [("", None)]}
        self.step = dict.fromkeys(self.ladders, 0)
        self.using_torch = {"binding": uses_torch_namespace(cpp), "kernel": uses_torch_namespace(cuda)}

    def include_flags(self, unit: str) -> list[str]:
        folder = self.ladders[unit][self.step[unit]][1]
        return [f"-I{folder}"] if folder else []

    def labels(self) -> dict[str, str]:
        """The record's fields: what each unit is (being) compiled against."""
        return {f"{u}_header": rungs[self.step[u]][0] for u, rungs in self.ladders.items()}

    def climb(self, failures: dict[str, str]) -> dict[str, str]:
        """Move each unit that failed for lack of a torch declaration one rung up; what moved, where."""
        moved = {}
        for unit, text in failures.items():
            if self.step[unit] + 1 < len(self.ladders[unit]) and lacks_torch_declaration(text, self.using_torch[unit]):
                self.step[unit] += 1
                moved[unit] = self.ladders[unit][self.step[unit]][0]
        return moved


def _aten_ops_dir() -> Path:
    from torch.utils.cpp_extension import include_paths

    return Path(include_paths()[0]) / "ATen" / "ops"


# What a light rung's failure says when it can come from a torch declaration that the rung
# lacks: a torch, ATen or c10 name or type in the message or its operand/argument types (an
# operator, overload or method declared outside the Tensor class, an incomplete type, a
# conversion torch/types.h adds). A syntax error, or a name of the candidate's own, fails the
# same on every rung.
_TORCH_NAMED = re.compile(r"\b(?:at|c10|torch|caffe2)::|\b(?:Tensor(?:Options|Base|List|Accessor)?|Scalar(?:Type)?|"
                          r"IntArrayRef|SymInt|Half|BFloat16|Generator|Device|Layout|MemoryFormat)\b")
_SYNTAX = re.compile(r"\bexpected (?:a |an |['\u2018\"]|primary|unqualified|declaration|identifier|initializer)"
                     r"|\bstray\b|missing terminating|unterminated|unbalanced")
# nvcc's continuation lines that belong to an error's message (not its echo of the source line)
_DETAIL = re.compile(r"^\s+(?:operand types are|argument types are|object type is|types are):")
_TORCH_SUBDIRS = ("ATen", "c10", "torch")


def _error_blocks(compiler_output: str) -> list[str]:
    """Each error of a compiler's output: '<file>\\t<message>' and its continuation lines that
    say more of it (operand and argument types), not the source echo or notes."""
    blocks: list[str] = []
    current = None
    for line in compiler_output.splitlines():
        m = GCC_RE.match(line) or NVCC_RE.match(line)
        if m:
            current = None
            if "error" in m["sev"]:
                blocks.append(f"{m['file']}\t{m['msg']}")
                current = len(blocks) - 1
        elif current is not None and _DETAIL.match(line):
            blocks[current] += "\n" + line.strip()
        elif not line.startswith(" "):
            current = None
    return blocks


def _declared_in_torch(name: str) -> bool:
    """Whether torch's own headers (ATen, c10, torch; not the third-party ones) mention `name` as
    a word: an unqualified name a `using namespace` brought in may be declared there."""
    if not re.fullmatch(r"[A-Za-z_]\w{2,}", name):
        return False
    base = _aten_ops_dir().parent.parent
    try:
        return subprocess.run(["grep", "-rqw", "--include=*.h", "--include=*.cuh", name,
                               *(str(base / d) for d in _TORCH_SUBDIRS)], timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return True


def uses_torch_namespace(sources: list[str]) -> bool:
    """Whether unqualified names in the sources may be torch's (`using namespace torch;`)."""
    return any(re.search(r"using\s+namespace\s+(?:torch|at|c10)\b", s) for s in sources)


def lacks_torch_declaration(compiler_output: str, using_torch: bool = True) -> bool:
    """Whether a failed build can be missing a declaration that a fuller torch header gives: an
    error inside torch's (or our stand-in) headers, an error naming a torch type or name, or a
    missing declaration of a name torch declares (an ATen operator, a macro, a name brought in by
    `using namespace`, looked up only when `using_torch`). A name of the candidate's own (a typo)
    or a syntax error is its error to fix, and the same at every rung: those do not climb."""
    ops_dir = _aten_ops_dir()
    torch_dirs = [str(ops_dir.parent.parent / d) for d in _TORCH_SUBDIRS]
    for block in _error_blocks(compiler_output):
        file, _, message = block.partition("\t")
        if any(file.startswith(d) for d in torch_dirs) or "/kernel_headers/" in file:
            return True
        if _SYNTAX.search(message.split("\n")[0]) or _LIBRARY_NAME.search(message):
            continue  # its own syntax, or a CUDA library's name (the same on every rung)
        if _TORCH_NAMED.search(message):
            return True
        if not _MISSING_DECLARATION.search(message):
            continue
        for name in _QUOTED.findall(message):
            name = name.strip()
            if name in ("torch", "at", "c10") or name.startswith(("torch::", "at::", "c10::", "AT_", "C10_", "TORCH_")) \
                    or (ops_dir / f"{name}.h").is_file() \
                    or (using_torch and _declared_in_torch(name)):
                return True
    return False


# ------------------------------------------------------------------ CUDA headers a CPU host lacks

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


class NeedsGPU(Exception):
    """A CUDA extension compiled, but this machine cannot run it (no CUDA device or CUDA torch)."""


class BuildError(Exception):
    """An extension failed to build; `text` holds the compiler output."""

    def __init__(self, message: str, text: str = "", diagnostics: list[dict] | None = None):
        super().__init__(message)
        self.text = text
        self.diagnostics = diagnostics or []


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


# ------------------------------------------------------------------ manifest (parent side)


def manifest_path(build_root: Path, candidate_source: str) -> Path:
    return Path(build_root) / "manifests" / f"{_sha(CACHE_VERSION, candidate_source)[:32]}.json"


def cached_manifest(build_root: Path, candidate_source: str) -> dict | None:
    """The extensions a candidate built before, if every one of them is still in the cache."""
    path = manifest_path(build_root, candidate_source)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for ext in data.get("extensions", []):
        obj = Path(build_root) / "objects" / ext["key"]
        if not ((obj / "done").exists() or (data.get("needs_gpu") and (obj / "compiled").exists())):
            return None
    return data


def write_manifest(build_root: Path, candidate_source: str, data: dict) -> None:
    _write_atomically(manifest_path(build_root, candidate_source), json.dumps(data))


# ------------------------------------------------------------------ diagnostics

GCC_RE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
                    r"(?P<sev>fatal error|error|warning|note): (?P<msg>.*)$")
NVCC_RE = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark)"
                     r"(?: #[\w-]+)?: (?P<msg>.*)$")
LINK_RE = re.compile(r"(undefined reference to [`'](?P<sym>[^'`]+)'|undefined symbol: (?P<sym2>\S+))")


@dataclass
class Generated:
    """A file load_inline generated from pieces of the candidate's source."""

    path: str
    pieces: list[str]
    kinds: list[str] = field(default_factory=list)  # "implicit", "source", "binding"

    def locate(self, line: int) -> tuple[int, int] | None:
        """(piece index, 0-based line within the piece) of a 1-based line of the file."""
        start = 1
        for i, piece in enumerate(self.pieces):
            n = piece.count("\n") + 1
            if start <= line < start + n:
                return i, line - start
            start += n
        return None


def _demangle(sym: str) -> str:
    try:
        out = subprocess.run(["c++filt", sym], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or sym
    except (OSError, subprocess.SubprocessError):
        return sym


class SourceMap:
    """Maps lines of generated files back to lines of the candidate .py."""

    def __init__(self, candidate_source: str):
        self.lines = candidate_source.splitlines()
        self.constants: list[tuple[int, str]] = []
        try:
            for node in ast.walk(ast.parse(candidate_source)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
                    self.constants.append((node.lineno, node.value))
        except SyntaxError:
            pass
        self.generated: dict[str, Generated] = {}

    def add(self, gen: Generated) -> None:
        self.generated[os.path.basename(gen.path)] = gen

    def candidate_line(self, piece: str, offset: int, text: str) -> int | None:
        want = text.strip()
        for lineno, value in self.constants:
            pos = value.find(piece) if piece else -1
            if pos < 0:
                continue
            line = lineno + value[:pos].count("\n") + offset
            if 0 < line <= len(self.lines) and (not want or self.lines[line - 1].strip() == want):
                return line
        if want:
            hits = [i + 1 for i, ln in enumerate(self.lines) if ln.strip() == want]
            if len(hits) == 1:
                return hits[0]
        return None

    def resolve(self, file: str, line: int | None) -> tuple[str, int | None, str, bool]:
        """(display file, candidate line, source text, in the candidate's own code)."""
        gen = self.generated.get(os.path.basename(file))
        if gen is None or line is None:
            return file, None, "", False
        where = gen.locate(line)
        if where is None:
            return os.path.basename(file), None, "", False
        idx, off = where
        piece = gen.pieces[idx]
        text = piece.split("\n")[off] if off < piece.count("\n") + 1 else ""
        kind = gen.kinds[idx] if idx < len(gen.kinds) else "source"
        if kind == "binding":
            hits = [i + 1 for i, ln in enumerate(self.lines) if "functions" in ln]
            return os.path.basename(file), (hits[0] if hits else None), text, True
        if kind == "implicit":
            return os.path.basename(file), None, text, False
        return os.path.basename(file), self.candidate_line(piece, off, text), text, True


def parse_diagnostics(text: str, smap: SourceMap | None = None, limit: int = 20) -> list[dict]:
    """Compiler/linker output -> diagnostics, errors in the candidate's own code first."""
    found: list[tuple[int, int, dict]] = []
    seen = set()
    for order, raw in enumerate(text.splitlines()):
        line = raw.rstrip()
        m = GCC_RE.match(line) or NVCC_RE.match(line)
        diag = None
        if m:
            sev = m["sev"]
            severity = "error" if "error" in sev else ("warning" if sev == "warning" else "note")
            lineno = int(m["line"])
            col = int(m["col"]) if "col" in m.groupdict() and m["col"] else None
            file, cand_line, src, own = smap.resolve(m["file"], lineno) if smap else (m["file"], None, "", False)
            msg = m["msg"].strip()
            if smap and os.path.basename(m["file"]) == "main.cpp" and own and cand_line is not None \
                    and "PYBIND11_MODULE" not in src and "m.def(" in src:
                msg += " (a name in `functions` must be declared in cpp_sources with that exact name)"
            diag = dict(severity=severity, message=msg, file=os.path.basename(file), line=lineno, column=col,
                        candidate_line=cand_line, source_line=src.strip())
            rank = (0 if severity == "error" else 2 if severity == "warning" else 3) + (0 if own else 1)
        else:
            lm = LINK_RE.search(line)
            if lm:
                sym = lm["sym"] or lm["sym2"]
                diag = dict(severity="error", file="", line=None, column=None, candidate_line=None, source_line="",
                            message=f"undefined symbol {_demangle(sym)}: a function is declared but not defined "
                                    "(or defined with a different signature, or in a source not compiled)")
                rank = 0
        if diag is None:
            continue
        key = (diag["file"], diag["line"], diag["message"])
        if key in seen:
            continue
        seen.add(key)
        found.append((rank, order, diag))
    found.sort(key=lambda t: (t[0], t[1]))
    return [d for _, _, d in found[:limit]]


def tail(text: str, n: int = 4000) -> str:
    return text if len(text) <= n else "...\n" + text[-n:]


# ------------------------------------------------------------------ environment fingerprint

_env_cache: dict[str, Any] = {}


def _tool_version(cmd: list[str]) -> str:
    key = " ".join(cmd)
    if key not in _env_cache:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            _env_cache[key] = (out.stdout or out.stderr).strip().splitlines()[-1:] or [""]
        except (OSError, subprocess.SubprocessError):
            _env_cache[key] = ["missing"]
    return _env_cache[key][0]


def cuda_arch() -> str:
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    if arch:
        return arch
    import torch

    if torch.cuda.is_available():
        caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return ";".join(f"{a}.{b}" for a, b in caps)
    return "sm_90"


def env_fingerprint(with_cuda: bool) -> dict:
    import torch

    fp = {"v": CACHE_VERSION, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
          "python": sys.version_info[:2], "cxx": os.environ.get("CXX", "c++"),
          "cxx_version": _tool_version([os.environ.get("CXX", "c++"), "--version"])[:80]}
    if with_cuda:
        fp["nvcc"] = _tool_version(["nvcc", "--version"])
        fp["arch"] = cuda_arch()
    return fp


# ------------------------------------------------------------------ the cache wrapper (worker side)


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v]


def _lock_dir(path: Path, blocking: bool) -> int | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def _unlock(fd: int | None) -> None:
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _import_so(module_name: str, location: Path):
    """Import an extension module from `location`: its folder, or the .so itself (any name, e.g.
    /proc/self/fd/N: the loader is named explicitly, not chosen by the file's suffix)."""
    import importlib.machinery
    import importlib.util

    path = location / f"{module_name}.so" if location.is_dir() else location
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(path))
    spec = importlib.util.spec_from_file_location(module_name, str(path), loader=loader)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UNIT_FILES = {"binding": "main.cpp", "kernel": "cuda.cu"}


def _binding(a: dict) -> list[str]:
    functions = a.get("functions")
    if functions is None:
        return []
    names = [functions] if isinstance(functions, str) else list(functions)
    wrap = a.get("with_pytorch_error_handling", True)
    lines = ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
    for n in names:
        fn = f"torch::wrap_pybind_function({n})" if wrap else n
        lines.append(f'm.def("{n}", {fn}, "{n}");')
    lines.append("}")
    return lines


def generated_sources(cpp: list[str], cuda: list[str], a: dict) -> dict[str, str]:
    """The two files load_inline generates: {'binding': main.cpp, 'kernel': cuda.cu}."""
    implicit = not a.get("no_implicit_headers")
    main = "\n".join((["#include <torch/extension.h>"] if implicit else []) + cpp + _binding(a))
    cu = "\n".join((["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
                    if implicit else []) + cuda)
    return {"binding": main, "kernel": cu}


def compile_only_commands(module_name: str, a: dict, extra_flags: list[str]) -> dict[str, list[str]]:
    """The commands that compile load_inline's two generated files to objects, as cpp_extension's
    build would (its include paths, defines and nvcc flags), with no link: {'binding': host
    compiler on main.cpp, 'kernel': nvcc on cuda.cu}. A rung's -I folder goes at the end."""
    import sysconfig

    import torch.utils.cpp_extension as ce

    incs = [*ce.include_paths(), sysconfig.get_paths()["include"], *(a.get("extra_include_paths") or [])]
    inc_flags = [f for p in incs for f in ("-isystem", p)] + extra_flags
    defs = [f"-DTORCH_EXTENSION_NAME={module_name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    arch = cuda_arch().split(";")[0].replace(".", "").replace("sm_", "")
    return {
        "binding": [os.environ.get("CXX", "c++"), "-c", "main.cpp", "-o", "main.o", "-fPIC", "-std=c++17", *defs,
                    *inc_flags, *_as_list(a.get("extra_cflags"))],
        "kernel": ["nvcc", "-c", "cuda.cu", "-o", "cuda.cuda.o", "-std=c++17", f"-arch=sm_{arch}",
                   "--compiler-options", "-fPIC", *ce.COMMON_NVCC_FLAGS, *defs, *inc_flags,
                   *_as_list(a.get("extra_cuda_cflags"))],
    }


@dataclass
class UnitCompile:
    """One compile of one translation unit on one rung."""

    label: str
    ok: bool
    wall_s: float
    cpu_s: float  # user + system time of the compiler and its subprocesses
    output: str


def _timed_compile(cmd: list[str], directory: Path) -> tuple[bool, float, float, str]:
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode == 0, time.monotonic() - t0, usage.ru_utime + usage.ru_stime, output


def compile_on_rungs(root: Path, directory: Path, unit: str, sources: list[str], functions=None,
                     which: str = "ladder") -> list[UnitCompile]:
    """Compile one of load_inline's generated files to an object, as the CPU path does (the
    candidate's `sources` are its cpp_sources for unit 'binding', its cuda_sources for 'kernel'):
    which='ladder' climbs as a build does (stopping at the first rung that compiles, or that fails
    for a reason of the candidate's own), 'every' compiles on every rung, 'full' only on the real
    torch/extension.h. For the wrapper corpus (tests/programs/wrappers) and its benchmark."""
    cpp, cuda = (list(sources), []) if unit == "binding" else ([], list(sources))
    a = {"functions": functions}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / UNIT_FILES[unit]).write_text(generated_sources(cpp, cuda, a)[unit])
    cmd = compile_only_commands("st_rungs", a, host_cuda_headers(root).flags)[unit]
    rungs = HeaderRungs(root, cpp, cuda)
    last = len(rungs.ladders[unit]) - 1
    if which == "full":
        rungs.step[unit] = last
    runs = []
    while True:
        ok, wall, cpu, output = _timed_compile(cmd + rungs.include_flags(unit), directory)
        runs.append(UnitCompile(rungs.labels()[f"{unit}_header"], ok, round(wall, 2), round(cpu, 2), output))
        if which == "every" and rungs.step[unit] < last:
            rungs.step[unit] += 1
        elif which == "every" or ok or not rungs.climb({unit: output}):
            return runs


def _compiled_message(name: str, lacks: str) -> str:
    """What a compile-only check of a CUDA extension found (the NeedsGPU message, also cached)."""
    if lacks:
        return (f"extension '{name}' is CUDA code; this machine lacks {lacks}, so it was compiled only as far as "
                "that allows; building and running it needs a GPU machine")
    return f"extension '{name}' compiled; it is CUDA code and running it needs a GPU"


class BuildCache:
    """Installed in a worker: records what each load_inline/load did."""

    def __init__(self, root: Path, candidate_source: str = "", candidate_file: str = "",
                 allow_build: bool = True, emit=None, prebuilt: dict[str, str] | None = None):
        self.root = Path(root)
        # extensions built earlier, by key: paths of their .so (in a candidate room, /proc/self/fd/N
        # of files the judge opened in the cache); anything else is built into `root`
        self.prebuilt = dict(prebuilt or {})
        self.smap = SourceMap(candidate_source)
        self.candidate_file = candidate_file
        self.allow_build = allow_build
        self.emit = emit
        self.extensions: list[dict] = []
        self.diagnostics: list[dict] = []
        self.log = ""
        self.orig_inline = None
        self.orig_load = None

    # -- installation
    def install(self) -> None:
        import torch.utils.cpp_extension as ce

        self.orig_inline, self.orig_load = ce.load_inline, ce.load
        cache = self

        def load_inline(*args, **kwargs):
            return cache.load_inline(*args, **kwargs)

        def load(*args, **kwargs):
            return cache.load(*args, **kwargs)

        load_inline.__doc__ = ce.load_inline.__doc__
        load.__doc__ = ce.load.__doc__
        ce.load_inline = load_inline
        ce.load = load

    # -- load_inline
    def load_inline(self, *args, **kwargs):
        import inspect

        import torch

        bound = inspect.signature(self.orig_inline).bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        cpp = _as_list(a["cpp_sources"])
        cuda = _as_list(a["cuda_sources"])
        if _as_list(a.get("sycl_sources")):
            raise BuildError("sycl_sources are not supported")
        functions = a["functions"]
        with_cuda = bool(cuda) if a["with_cuda"] is None else bool(a["with_cuda"])
        options = {k: a[k] for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
                                     "with_cuda", "is_python_module", "with_pytorch_error_handling",
                                     "no_implicit_headers")}
        env = env_fingerprint(with_cuda)
        bind_key = _sha("inline", cpp, functions, options, env)
        full_key = _sha(bind_key, cuda)[:40]
        module_name = f"st_{bind_key[:16]}"
        record = {"name": str(a["name"]), "key": full_key, "module": module_name, "cached": False,
                  "seconds": 0.0, "with_cuda": with_cuda}
        self.extensions.append(record)
        objdir = self.root / "objects" / full_key
        gpu_ok = torch.cuda.is_available() and torch.version.cuda is not None
        t0 = time.monotonic()

        if full_key in self.prebuilt:
            record["cached"] = True
            if with_cuda and not gpu_ok:
                raise NeedsGPU(f"extension '{a['name']}' is CUDA code (compiled earlier); running it needs a GPU")
            module = _import_so(module_name, Path(self.prebuilt[full_key]))
            record["seconds"] = round(time.monotonic() - t0, 3)
            return module
        if (objdir / "done").exists() and (objdir / f"{module_name}.so").exists():
            record["cached"] = True
            if with_cuda and not gpu_ok:
                raise NeedsGPU(f"extension '{a['name']}' is CUDA code (compiled earlier); running it needs a GPU")
            module = _import_so(module_name, objdir)
            record["seconds"] = round(time.monotonic() - t0, 3)
            return module
        if (objdir / "compiled").exists() and with_cuda and not gpu_ok:
            record["cached"] = True
            said = (objdir / "compiled").read_text().strip()  # what the check found (older caches: "ok")
            raise NeedsGPU(f"{said if said != 'ok' else _compiled_message(a['name'], '')} (checked earlier)")
        if not self.allow_build:
            raise BuildError(f"extension '{a['name']}' is not built")

        if self.emit:
            self.emit("building", name=str(a["name"]), key=full_key)
        stable = self.root / "work" / bind_key[:32]
        fd = _lock_dir(self.root / "locks" / f"{bind_key[:32]}.lock", blocking=False)
        if fd is None:  # another build holds the stable directory: build on our own
            stable = self.root / "work" / f"{bind_key[:32]}-{full_key[:12]}"
            fd = _lock_dir(self.root / "locks" / f"{bind_key[:32]}-{full_key[:12]}.lock", blocking=True)
        try:
            stable.mkdir(parents=True, exist_ok=True)
            stale = stable / "lock"
            if stale.exists():  # we hold the flock: nobody else is building here
                stale.unlink()
            self._register_generated(stable, cpp, cuda, functions, a)
            if with_cuda and not gpu_ok:
                message = _compiled_message(a["name"], self._compile_only(stable, module_name, cpp, cuda, a))
                objdir.mkdir(parents=True, exist_ok=True)
                _write_atomically(objdir / "compiled", message)  # the compile-only check, cached
                record["seconds"] = round(time.monotonic() - t0, 3)
                raise NeedsGPU(message)
            kwargs = dict(a)
            kwargs.update(name=module_name, build_directory=str(stable), verbose=False)
            module = None
            rungs = HeaderRungs(self.root, cpp, cuda, with_cuda)
            # cpp_extension names a rebuild with other flags `<name>_v1` (a module of the first
            # name may be imported already); a failed build imported nothing, and the published
            # .so must define PyInit_<module_name>: each rung builds under the same name
            versions = getattr(torch.utils.cpp_extension, "JIT_EXTENSION_VERSIONER", None)
            while module is None:
                record.update(rungs.labels())
                if versions is not None:
                    versions.entries.pop(module_name, None)
                try:
                    module = self.orig_inline(**dict(
                        kwargs, extra_cflags=[*_as_list(a["extra_cflags"]), *rungs.include_flags("binding")],
                        extra_cuda_cflags=[*_as_list(a["extra_cuda_cflags"]), *rungs.include_flags("kernel")]))
                except (RuntimeError, ImportError, OSError, subprocess.SubprocessError) as exc:
                    climbed = rungs.climb(_failed_units(str(exc)))
                    if not climbed:
                        raise self._build_error(a["name"], str(exc)) from None
                    if self.emit:  # it uses something only a fuller header declares
                        self.emit("building", name=str(a["name"]), key=full_key, headers=climbed)
            self._publish(stable, module_name, objdir)
        finally:
            _unlock(fd)
        record["seconds"] = round(time.monotonic() - t0, 3)
        return module

    def _register_generated(self, directory: Path, cpp: list[str], cuda: list[str], functions, a) -> None:
        implicit = not a.get("no_implicit_headers")
        pieces, kinds = [], []
        if implicit:
            pieces.append("#include <torch/extension.h>")
            kinds.append("implicit")
        pieces += cpp
        kinds += ["source"] * len(cpp)
        if functions is not None:
            names = [functions] if isinstance(functions, str) else list(functions)
            pieces.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
            kinds.append("binding")
            for n in names:
                pieces.append(f'm.def("{n}", ...);')
                kinds.append("binding")
            pieces.append("}")
            kinds.append("binding")
        self.smap.add(Generated(str(directory / "main.cpp"), pieces, kinds))
        if cuda:
            cpieces = (["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
                       if implicit else [])
            ckinds = ["implicit"] * len(cpieces)
            self.smap.add(Generated(str(directory / "cuda.cu"), cpieces + cuda, ckinds + ["source"] * len(cuda)))

    def _build_error(self, name: str, text: str) -> "BuildError":
        """cpp_extension's failure text, logged and parsed into diagnostics on the candidate's lines."""
        self.log += text
        diags = parse_diagnostics(text, self.smap)
        self.diagnostics.extend(diags)
        return BuildError(f"building extension '{name}' failed", text, diags)

    def _publish(self, stable: Path, module_name: str, objdir: Path) -> None:
        sos = sorted(stable.glob(f"{module_name}*.so"), key=lambda p: p.stat().st_mtime)
        if not sos:
            return
        tmp = objdir.with_name(objdir.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        shutil.copy2(sos[-1], tmp / f"{module_name}.so")
        (tmp / "done").write_text("ok")
        try:
            os.replace(tmp, objdir)
        except OSError:  # someone published the same key first
            shutil.rmtree(tmp, ignore_errors=True)

    def _compile_only(self, directory: Path, module_name: str, cpp: list[str], cuda: list[str], a) -> str:
        """No CUDA torch here: compile the generated sources to objects for real diagnostics,
        against the CUDA headers this host has and stand-ins for the rest (`host_cuda_headers`).
        Returns what this host lacks when that stopped the check short of the end ('' when both
        units compiled); raises BuildError on an error of the candidate's own."""
        for unit, text in generated_sources(cpp, cuda, a).items():
            (directory / UNIT_FILES[unit]).write_text(text)
        host = host_cuda_headers(self.root)
        cmds = compile_only_commands(module_name, a, host.flags)
        rungs = HeaderRungs(self.root, cpp, cuda)
        codes, outs = {}, {}

        def compile_units(units) -> None:
            procs = {u: subprocess.Popen(cmds[u] + rungs.include_flags(u), cwd=directory, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True) for u in units}
            for u, proc in procs.items():
                outs[u], codes[u] = proc.communicate()[0], proc.returncode

        compile_units(cmds)
        while any(codes.values()):
            moved = rungs.climb({u: outs[u] for u in cmds if codes[u]})
            if not moved:
                break
            compile_units(moved)
        self.extensions[-1].update(rungs.labels())
        text = "".join(outs.values())
        self.log += text
        diags = parse_diagnostics(text, self.smap)
        if not any(codes.values()):
            self.diagnostics.extend(diags)
            return ""
        lacks = beyond_this_host("".join(outs[u] for u in cmds if codes[u]), host.stood_in)
        if not lacks:
            self.diagnostics.extend(diags)
            raise BuildError(f"building extension '{a['name']}' failed", text, diags)
        # e.g. the candidate calls cuBLAS and this host has no cuBLAS headers: no fault of the
        # candidate's, and nothing past it can be checked here (its other code compiled)
        for d in diags:
            if d["severity"] == "error":
                d.update(severity="note", message=f"not checked on this host (it lacks the CUDA library): {d['message']}")
        self.diagnostics.extend(diags)
        headers, names = [n for n in lacks if n.endswith(".h")], [n for n in lacks if not n.endswith(".h")]
        return " and ".join([f"the CUDA library headers {', '.join(headers)}"] * bool(headers)
                            + [f"the CUDA library headers that declare {', '.join(names[:6])}"] * bool(names))

    # -- load (sources are files)
    def load(self, *args, **kwargs):
        import inspect

        import torch

        bound = inspect.signature(self.orig_load).bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        sources = _as_list(a["sources"])
        contents = []
        for s in sources:
            try:
                contents.append(Path(s).read_text(errors="replace"))
            except OSError:
                contents.append(s)
        with_cuda = any(s.endswith((".cu", ".cuh")) for s in sources) if a["with_cuda"] is None else a["with_cuda"]
        options = {k: a[k] for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
                                     "with_cuda", "is_python_module", "is_standalone")}
        key = _sha("load", [Path(s).name for s in sources], contents, options, env_fingerprint(with_cuda))[:40]
        name = str(a["name"])
        record = {"name": name, "key": key, "module": name, "cached": False, "seconds": 0.0, "with_cuda": with_cuda}
        self.extensions.append(record)
        if with_cuda and not (torch.cuda.is_available() and torch.version.cuda):
            raise NeedsGPU(f"extension '{name}' is CUDA code; building and running it needs a GPU")
        directory = self.root / "work" / f"load-{key}"
        directory.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        fd = _lock_dir(self.root / "locks" / f"load-{key}.lock", blocking=True)
        try:
            if (directory / "lock").exists():
                (directory / "lock").unlink()
            record["cached"] = any(directory.glob(f"{name}*.so"))
            a.update(build_directory=str(directory), verbose=False)
            try:
                module = self.orig_load(**a)
            except (RuntimeError, ImportError, OSError, subprocess.SubprocessError) as exc:
                raise self._build_error(name, str(exc)) from None
            objdir = self.root / "objects" / key
            objdir.mkdir(parents=True, exist_ok=True)
            (objdir / "done").write_text("ok")
        finally:
            _unlock(fd)
        record["seconds"] = round(time.monotonic() - t0, 3)
        return module
