"""Building candidates' extensions: a content-addressed cache around `torch.utils.cpp_extension`.

KernelBench candidates call `load_inline(name, cpp_sources, cuda_sources, functions, ...)` when
they are imported. Inside a worker, `install_build_cache` replaces `load_inline` and `load` with
wrappers that

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
  then torch/types.h (kernel file); then the real header. A unit whose build misses a torch
  declaration climbs a rung (`kernel_header_rungs`, `binding_header_rungs`);
- parse compiler output into diagnostics mapped back to the candidate's own lines;
- without a CUDA-enabled torch (the CPU path) compile CUDA sources to objects with nvcc (and the
  binding with the host compiler) to report real compiler diagnostics, then stop with NeedsGPU.

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


_MISSING_HEADER = re.compile(r'(?:fatal error: ([\w./+-]+\.h(?:pp)?): No such file or directory'
                             r'|cannot open source file "([\w./+-]+\.h(?:pp)?)")')


def _missing_toolkit_headers(text: str, candidate_code: str) -> list[str]:
    """Headers the compiler could not find, when every error is such a header and none of them is
    included by the candidate's own code (they come in through torch's or CUDA's headers)."""
    missing = sorted({a or b for a, b in _MISSING_HEADER.findall(text)})
    errors = [line for line in text.splitlines() if re.search(r"\berror\b", line)]
    if not missing or any(not _MISSING_HEADER.search(line) for line in errors):
        return []
    own = set(re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', candidate_code))
    return [] if own & set(missing) else missing


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
    ops = sorted(n for n in names if (ops_dir / f"{n}.h").is_file())
    aside = [h for h, used in _ASIDE_HEADERS.items() if used.search(text)]
    lines = ["#pragma once", "// stitch-mcp: ATen's per-operator headers for what this file calls;",
             "// see per_operator_headers in stitch_mcp/build.py", "#include <ATen/core/Tensor.h>",
             "#include <optional>", *(f"#include <{h}>" for h in aside)]
    if "AT_DISPATCH" in text:
        lines.append("#include <ATen/Dispatch.h>")
    if "indexing::" in text:
        lines.append("#include <ATen/TensorIndexing.h>")
    lines += [f"#include <ATen/ops/{n}.h>" for n in ops]
    lines += ["namespace torch {", "using namespace at;  // NOLINT", "using std::nullopt;", "using std::optional;",
              "using Dtype = at::ScalarType;"]
    lines += [f"constexpr auto {k} = {v};" for k, v in _TORCH_DTYPE_ALIASES.items()]
    lines.append("}  // namespace torch")
    header = "\n".join(lines) + "\n" + extra
    files = dict.fromkeys(("torch/extension.h", "torch/types.h", "ATen/ATen.h"), header)
    drop = re.compile(r"^#include <(?:%s)>\n" % "|".join(map(re.escape, set(_ASIDE_HEADERS) - set(aside))), re.M)
    for n in ops:
        files[f"ATen/ops/{n}.h"] = drop.sub("", (ops_dir / f"{n}.h").read_text())
    if not _CUDA_CONTEXT_NEEDS.search(text) and "ATen/Context.h" not in aside:
        files["ATen/cuda/CUDAContext.h"] = _CUDA_CONTEXT
    return files


def _write_atomically(path: Path, text: str) -> None:
    """Readers (other workers building at the same time) see the whole file or none of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _header_dir(root: Path, files: dict[str, str]) -> Path:
    """A folder of stand-in headers, named by their content (written once)."""
    folder = root / "kernel_headers" / _sha(files)[:16]
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
            if self.step[unit] + 1 < len(self.ladders[unit]) and lacks_torch_declaration(text):
                self.step[unit] += 1
                moved[unit] = self.ladders[unit][self.step[unit]][0]
        return moved


def _aten_ops_dir() -> Path:
    from torch.utils.cpp_extension import include_paths

    return Path(include_paths()[0]) / "ATen" / "ops"


def lacks_torch_declaration(compiler_output: str) -> bool:
    """Whether a failed build misses a declaration that a fuller torch header would give:
    an error about a name in torch, at or c10, a torch macro, or an ATen operator. A name of the
    candidate's own (a typo) is its error to fix, and the same at every rung."""
    ops_dir = _aten_ops_dir()
    for line in compiler_output.splitlines():
        if "error" not in line or not _MISSING_DECLARATION.search(line):
            continue
        for name in _QUOTED.findall(line):
            name = name.strip()
            if name in ("torch", "at", "c10") or name.startswith(("torch::", "at::", "c10::", "AT_", "C10_", "TORCH_")) \
                    or (re.fullmatch(r"\w+", name) and (ops_dir / f"{name}.h").is_file()):
                return True
    return False


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
            raise NeedsGPU(f"extension '{a['name']}' is CUDA code (compiled earlier); running it needs a GPU")
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
                self._compile_only(stable, module_name, cpp, cuda, a)
                objdir.mkdir(parents=True, exist_ok=True)
                (objdir / "compiled").write_text("ok")
                record["seconds"] = round(time.monotonic() - t0, 3)
                raise NeedsGPU(f"extension '{a['name']}' compiled; it is CUDA code and running it needs a GPU")
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

    def _compile_only(self, directory: Path, module_name: str, cpp: list[str], cuda: list[str], a) -> None:
        """No CUDA torch here: compile the generated sources to objects for real diagnostics."""
        import sysconfig

        import torch.utils.cpp_extension as ce

        implicit = not a.get("no_implicit_headers")
        main = "\n".join((["#include <torch/extension.h>"] if implicit else []) + cpp + self._binding(a))
        cu = "\n".join((["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
                        if implicit else []) + cuda)
        (directory / "main.cpp").write_text(main)
        (directory / "cuda.cu").write_text(cu)
        incs = [*ce.include_paths(), sysconfig.get_paths()["include"], *(a.get("extra_include_paths") or [])]
        inc_flags = [f for p in incs for f in ("-isystem", p)]
        defs = [f"-DTORCH_EXTENSION_NAME={module_name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
        arch = cuda_arch().split(";")[0].replace(".", "").replace("sm_", "")
        cmds = {
            "binding": [os.environ.get("CXX", "c++"), "-c", "main.cpp", "-o", "main.o", "-fPIC", "-std=c++17", *defs,
                        *inc_flags, *(a.get("extra_cflags") or [])],
            "kernel": ["nvcc", "-c", "cuda.cu", "-o", "cuda.cuda.o", "-std=c++17", f"-arch=sm_{arch}",
                       "--compiler-options", "-fPIC", *ce.COMMON_NVCC_FLAGS, *defs, *inc_flags,
                       *(a.get("extra_cuda_cflags") or [])],
        }
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
        text, failed = "".join(outs.values()), any(codes.values())
        self.log += text
        diags = parse_diagnostics(text, self.smap)
        self.diagnostics.extend(diags)
        missing = _missing_toolkit_headers(text, "\n".join(cpp + cuda))
        if failed and missing:
            # e.g. ATen/cuda/CUDAContext.h pulls in cusparse.h, which a CPU machine's CUDA install
            # may lack: not the candidate's fault, and nothing more can be checked here
            raise NeedsGPU(f"extension '{a['name']}' is CUDA code; this machine lacks {', '.join(missing)} "
                           "(CUDA library headers that its includes need), so it was compiled only that far; "
                           "building and running it needs a GPU machine")
        if failed:
            raise BuildError(f"building extension '{a['name']}' failed", text, diags)

    @staticmethod
    def _binding(a) -> list[str]:
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


# ------------------------------------------------------------------ build stage (worker side)


def build_stage(spec: dict[str, Any]) -> dict[str, Any]:
    """Import the candidate with the build cache installed: this builds (or finds) its extensions."""
    from stitch_mcp.worker import emit, stage

    stage("build_import")
    t0 = time.monotonic()
    import torch  # noqa: F401  (imported before the candidate, as the run stage does)

    from stitch_mcp.loader import import_program

    root = Path(spec["build_root"])
    cache = BuildCache(root, spec["candidate_source"], allow_build=True, emit=emit)
    cache.install()
    t_torch = time.monotonic() - t0
    stage("build")
    result: dict[str, Any] = {"torch_import_s": round(t_torch, 3)}
    try:
        module = import_program(spec["candidate_source"], "candidate", Path.cwd())
        result["has_model_new"] = hasattr(module, "ModelNew")
    except NeedsGPU as exc:
        result["needs_gpu"] = str(exc)
    except BuildError as exc:
        result["error"] = {"kind": "compile_error", "message": str(exc)}
        result["log"] = exc.text
    except SyntaxError as exc:
        result["error"] = {"kind": "syntax_error", "message": f"SyntaxError: {exc.msg} (line {exc.lineno})",
                           "line": exc.lineno}
    except BaseException as exc:  # the candidate's own import failed
        import traceback

        tb = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(tb) if f.filename.endswith("candidate.py")), None)
        from stitch_mcp.worker import classify_error_text

        found = classify_error_text(f"{type(exc).__name__}: {exc}")
        result["error"] = {"kind": found[0] if found else "import_error",
                           "message": f"{type(exc).__name__}: {exc}"[:3000], "line": line,
                           "traceback": "".join(traceback.format_exception(exc))[-4000:]}
    result["extensions"] = cache.extensions
    result["diagnostics"] = cache.diagnostics
    result["log_tail"] = tail(cache.log)
    result["seconds"] = round(time.monotonic() - t0, 3)
    if "error" not in result:
        write_manifest(root, spec["candidate_source"], {"extensions": cache.extensions,
                                                        "needs_gpu": result.get("needs_gpu", "")})
    return result
