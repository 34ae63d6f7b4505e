"""What each translation unit of an extension is compiled against: a ladder of headers, lightest
first. torch/extension.h brings the C++ frontend, pybind11 and the declarations of all ~2,000 ATen
operators, which kernels, their host wrappers and bindings rarely use, and nvcc parses it three
times (host front end, device front end, host compiler). First rung: the Tensor class and ATen's
per-operator headers for the operators the source names (`per_operator_headers`; plus torch's
pybind11 casters in the binding, main.cpp); then torch/types.h (kernel file, cuda.cu); then the
real header (`kernel_header_rungs`, `binding_header_rungs`, `HeaderRungs`).

A unit whose build fails in a way a missing torch declaration can cause
(`lacks_torch_declaration`: a torch type or name in the error, not only "undeclared") climbs a
rung; a syntax error or a name of the candidate's own does not.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from stitch_mcp.build.cache import _header_dir
from stitch_mcp.build.diagnostics import _MISSING_DECLARATION, _error_blocks
from stitch_mcp.build.host_headers import _LIBRARY_NAME

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
# `using namespace torch;` brings torch's own factory overloads (variable_factories.h: empty_like,
# zeros_like, ...), distinct from ATen's: an unqualified `empty_like(x)` finds both (ATen's through
# the Tensor argument) and does not compile with torch's headers. The per-operator rung lacks
# torch's, so it would compile it: such sources start at torch/types.h, which has them.
_USING_TORCH = re.compile(r"\busing\s+namespace\s+(?:::)?torch\s*;")
# the names a missing declaration's error quotes (nvcc's front end and gcc)
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
// which nvcc would otherwise parse three times. See stitch_mcp/build/headers.py.
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
_CUDA_CONTEXT = ("#pragma once\n// stitch-mcp: ATen/cuda/CUDAContext.h without ATen/Context.h; "
                 "see stitch_mcp/build/headers.py\n#include <ATen/cuda/CUDAContextLight.h>\n"
                 "#include <c10/cuda/CUDAStream.h>\n#include <c10/cuda/CUDAException.h>\n"
                 "#include <c10/util/Logging.h>\n")


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
             "// see per_operator_headers in stitch_mcp/build/headers.py", "#include <ATen/core/Tensor.h>",
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


def kernel_header_rungs(root: Path, cuda_sources: list[str]) -> list[tuple[str, Path | None]]:
    """What a kernel translation unit is compiled against, lightest first: (label, folder of
    stand-ins found before torch's own headers; None: torch's headers). A build that misses a
    torch declaration (`lacks_torch_declaration`) climbs to the next rung."""
    if wants_full_header(cuda_sources):
        return [("torch/extension.h", None)]
    rungs: list[tuple[str, Path | None]] = []
    ops_dir = _aten_ops_dir()
    if not any(_AUTOGRAD_NEEDS.search(s) or _USING_TORCH.search(s) for s in cuda_sources) and ops_dir.is_dir():
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
    if any(_FRONTEND_NEEDS.search(s) or _AUTOGRAD_NEEDS.search(s) or _USING_TORCH.search(s) for s in cpp_sources) \
            or not ops_dir.is_dir():
        return [full]
    return [("ATen per-operator", _header_dir(root, per_operator_headers(cpp_sources, ops_dir, BINDING_INCLUDES))),
            full]


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
_TORCH_SUBDIRS = ("ATen", "c10", "torch")


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
