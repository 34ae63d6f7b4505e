"""Facts about the C++/CUDA sources of a candidate: kernels and launches, ATen compute called from
C++ (a PyTorch fallback; cuBLAS, cuBLASLt, cuDNN, CUTLASS, CUB, Thrust and ThunderKittens calls
are legitimate), libraries, CUDA techniques (each with the line of the candidate .py it is on),
streams, TF32 math and static tensor caches. C++ with no CUDA in it is C++ for the CPU: its
techniques are SIMD, threads, cache blocking, fusion. `merge_cxx` folds every source's facts into
the candidate's Analysis with the findings they call for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from stitch_mcp.analysis.cxx_tokens import Tok, skip_balanced, tokenize_cxx, with_macro_bodies
from stitch_mcp.analysis.cxx_words import (ATEN_GLUE, CUDA_TEXT, CURRENT_STREAM, LIB_PREFIXES, LIBRARY_TECHNIQUE,
                                           SPLIT_TF32, STREAM_CREATE, STREAM_JOIN, TF32, TF32_MMA, id_technique,
                                           namespace_facts, pragma_techniques)
from stitch_mcp.analysis.model import PY, TECHNIQUE_LABELS, Analysis, CudaSource, OpUse, Technique, finding
from stitch_mcp.analysis.ops import COMPUTE, canonical_op

_CXX_HINT = re.compile(r"__global__|__device__|#include|torch::|at::|<<<|cudaMalloc|extern\s+\"C\"|"
                       r"\bcublas|\bcudnn|TORCH_CHECK|PYBIND11_MODULE")


def looks_like_cxx(text: str) -> bool:
    """Whether a string holds C/C++/CUDA code (an include, a kernel, a torch:: call, ...)."""
    return bool(_CXX_HINT.search(text)) and ("(" in text and (";" in text or "{" in text))


def regex_sources(source: str) -> list[CudaSource]:
    """Triple-quoted strings that look like C++, for a program that does not parse."""
    out = []
    for m in re.finditer(r"(?:[rRbBuU]{0,2})(\"\"\"|''')(.*?)\1", source, re.S):
        if looks_like_cxx(m.group(2)):
            out.append(CudaSource(m.group(2), source.count("\n", 0, m.start(2)) + 1))
    return out


@dataclass
class CxxFacts:
    """What one C++/CUDA source shows; lines are the candidate .py's."""

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


def merge_cxx(a: Analysis, ref_low_precision: bool) -> None:
    """Every C++/CUDA source's facts into the analysis, with the findings they call for: TF32 math on
    an fp32 task, tensors kept in static containers, private streams never joined."""
    creates: list[int] = []
    joins_anywhere = False
    for src in a.sources:
        f = analyze_cxx(src)
        _add_facts(a, src, f)
        _source_findings(a, f, ref_low_precision)
        creates += f.stream_creates
        joins_anywhere |= bool(f.stream_joins)
    if creates and not joins_anywhere:
        a.findings.append(finding("unjoined_stream", "certain",
                                  "the C++ source creates a private CUDA stream and never synchronizes or joins it "
                                  "to PyTorch's current stream: a timer on the current stream sees nothing",
                                  creates[0], ""))
    elif creates and "joined_streams" not in a.technique_keys():
        a.techniques.append(Technique("joined_streams", TECHNIQUE_LABELS["joined_streams"], creates[0], ""))


def _add_facts(a: Analysis, src: CudaSource, f: CxxFacts) -> None:
    """Kernels, launches, ATen calls, libraries and techniques; CUDA or CPU C++ (its loop nests)."""
    if f.kernels or f.launches or CUDA_TEXT.search(src.text):
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


def _source_findings(a: Analysis, f: CxxFacts, ref_low_precision: bool) -> None:
    """TF32/fp16 library math and TF32 tensor cores on an fp32 task; static containers of tensors."""
    if f.tf32 and not ref_low_precision:
        a.findings.append(finding("precision_downgrade", "probable",
                                  "asks cuBLAS/cuDNN for TF32/fp16 math on an fp32 task", f.tf32[0], "",
                                  severity="warning", file=PY))
    for line in f.tensor_caches:
        a.findings.append(finding(
            "output_cache", "probable", "the C++ keeps tensors in a static container across calls: outputs "
            "can be replayed (a static cache of plans, handles, descriptors or algorithms keyed on the shape is "
            "fine; of tensors it is not)", line, "", severity="warning"))
    if f.tf32_mma and not ref_low_precision:
        if f.split_tf32:
            a.notes.append(f"line {f.tf32_mma[0]}: TF32 tensor cores with a 3xTF32 split (fp32-accurate)")
        else:
            a.findings.append(finding(
                "tf32_tensor_cores", "possible",
                "TF32 tensor-core math on an fp32 task keeps 10 mantissa bits: the rules call plain TF32 a "
                "precision downgrade. Keep fp32 accuracy with 3xTF32 (split each operand into a TF32 high part "
                "and a TF32 residual, sum the three significant products) or use fp32 FMA",
                f.tf32_mma[0], "", severity="warning", file=PY, doc_id="card:tensor-cores"))


def analyze_cxx(src: CudaSource) -> CxxFacts:
    """Facts about one C++/CUDA source; lines are converted to the candidate .py's lines."""
    return _Reader(src).read()


class _Reader:
    """One pass over a source's tokens (string literals left out, `#define` bodies read in place)."""

    def __init__(self, src: CudaSource):
        self.lines = src.text.splitlines()
        self.off = src.py_line - 1
        self.toks = with_macro_bodies(tokenize_cxx(src.text))
        self.code = [t for t in self.toks if t.kind != "str"]
        self.strides = _stride_vars(self.code)
        self.facts = CxxFacts()
        self.shared = self.syncthreads = self.loop = False

    def read(self) -> CxxFacts:
        for k, t in enumerate(self.code):
            if t.kind == "pp":
                for key in pragma_techniques(t.value):
                    self.tech(key, t.line)
            elif t.kind == "id":
                self.identifier(k)
            elif t.value == "<<<":
                self.facts.launches.append((t.line + self.off, _launch_args(self.code, k)))
        self.finish()
        return self.facts

    def text(self, line: int) -> str:
        """The source's line `line`, stripped."""
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def tech(self, key: str, line: int) -> None:
        if not any(t.key == key for t in self.facts.techniques):
            self.facts.techniques.append(Technique(key, TECHNIQUE_LABELS[key], line + self.off, self.text(line)))

    def lib(self, name: str, line: int) -> None:
        self.facts.libraries.setdefault(name, line + self.off)
        self.tech(LIBRARY_TECHNIQUE[name], line)

    def op_use(self, name: str, call: str, line: int) -> OpUse:
        return OpUse(canonical_op(name), call, line + self.off, self.text(line))

    def identifier(self, k: int) -> None:
        code = self.code
        prev = code[k - 1].value if k else ""
        nxt = code[k + 1].value if k + 1 < len(code) else ""
        if prev != "::":  # a qualified name starts here: at::matmul, cublasLt..., nvcuda::wmma::...
            self.qualified_name(k)
        if prev in (".", "->") and nxt == "(":
            self.tensor_method(k)
        self.library_word(code[k])
        self.keyword(k, prev, nxt)
        self.marks(k, nxt)

    def qualified_name(self, k: int) -> None:
        """ATen compute (torch::matmul, at::conv2d), library namespaces and namespaced techniques."""
        t = self.code[k]
        parts, after = _qualified(self.code, k)
        if len(parts) > 1 and parts[0] in ("torch", "at", "aten") and after in ("(", "<"):
            last = parts[-1]
            if last in COMPUTE and last not in ATEN_GLUE and "cuda" not in parts[1:-1]:
                self.facts.aten.append(self.op_use(last, "::".join(parts), t.line))
        library, key = namespace_facts(parts)
        if library:
            self.lib(library, t.line)
        if key:
            self.tech(key, t.line)

    def tensor_method(self, k: int) -> None:
        """A method call on a tensor in C++: x.matmul(y), out.add_(b)."""
        t = self.code[k]
        if t.value in COMPUTE and t.value not in ATEN_GLUE:
            recv = self.code[k - 2] if k >= 2 else None
            if recv is not None and (recv.kind == "id" or recv.value == ")"):
                self.facts.aten_methods.append(self.op_use(t.value, f".{t.value}", t.line))

    def library_word(self, t: Tok) -> None:
        """cublasLtMatmul, CUDNN_..., at::cuda::getCurrentCUDABlasHandle: a library call."""
        v = t.value
        for prefix, name in LIB_PREFIXES:
            if v.startswith(prefix) and len(v) > len(prefix):
                self.lib(name, t.line)
                if v.startswith("CUBLASLT_EPILOGUE_") and v != "CUBLASLT_EPILOGUE_DEFAULT":
                    self.tech("cublaslt_epilogue", t.line)
                break
        if v in ("getCurrentCUDABlasHandle", "getCurrentCUDABlasLtHandle"):
            self.lib("cuBLASLt" if "Lt" in v else "cuBLAS", t.line)

    def keyword(self, k: int, prev: str, nxt: str) -> None:
        """Kernels, shared memory, barriers, loops (grid-stride ones) and one-word techniques."""
        t, v = self.code[k], self.code[k].value
        if v == "__global__":
            name = _kernel_name_after(self.code, k)
            if name and name not in self.facts.kernels:
                self.facts.kernels.append(name)
        elif v == "__shared__":
            self.shared = True
            self.tech("shared_memory", t.line)
        elif v == "__syncthreads":
            self.syncthreads = True
        elif v in ("for", "while"):
            self.loop = True
            header = [x.value for x in self.code[k + 1:skip_balanced(self.code, k + 1, "(", ")")]] \
                if nxt == "(" else []
            if v == "for" and "+=" in header and ("gridDim" in header or set(header) & self.strides):
                self.tech("grid_stride_loop", t.line)
        elif key := id_technique(v, prev):
            self.tech(key, t.line)

    def marks(self, k: int, nxt: str) -> None:
        """TF32 math, static tensor containers and stream calls, by line."""
        facts, t, v = self.facts, self.code[k], self.code[k].value
        line = t.line + self.off
        if TF32_MMA.match(v) or (v == "precision" and nxt == "::"):
            if v != "precision" or (k + 2 < len(self.code) and self.code[k + 2].value == "tf32"):
                facts.tf32_mma.append(line)
        if SPLIT_TF32.search(v):
            facts.split_tf32 = True
        if v == "static" and _static_tensor_container(self.code, k):
            facts.tensor_caches.append(line)
        if v in STREAM_CREATE and nxt == "(":
            facts.stream_creates.append(line)
        if v in STREAM_JOIN and nxt == "(":
            facts.stream_joins.append(line)
        if v in CURRENT_STREAM:
            facts.current_stream.append(line)
        if v in TF32:
            facts.tf32.append(line)

    def finish(self) -> None:
        """What the whole source shows: loop nests, shared-memory tiling, inline PTX, launches on the
        current stream."""
        facts = self.facts
        facts.outer_loops, blocked = _loop_nests(self.code)
        if blocked:
            self.tech("cpu_cache_blocking", blocked)
        if self.shared and self.syncthreads and self.loop:
            first = next(t for t in facts.techniques if t.key == "shared_memory")
            facts.techniques.append(Technique("smem_tiling", TECHNIQUE_LABELS["smem_tiling"], first.line, first.text))
        for key, line, tf32 in _asm_techniques(self.toks):
            self.tech(key, line)
            if tf32:
                facts.tf32_mma.append(line + self.off)
        if facts.launches and facts.current_stream:
            line = facts.current_stream[0]
            facts.techniques.append(Technique("current_stream", TECHNIQUE_LABELS["current_stream"], line,
                                              self.text(line - self.off)))


# Words that may stand between `__global__` and a kernel's name, with or without a parenthesised
# argument list: `__global__ void __launch_bounds__(256, 2) k(...)`, `__cluster_dims__(8, 1, 1)`,
# `__attribute__((noinline))`, `[[nodiscard]]`, `static`, `inline`.
_DECL_ATTRIBUTES = {"__launch_bounds__", "__cluster_dims__", "__align__", "__maxnreg__", "__attribute__",
                    "__declspec", "alignas", "__noinline__", "__forceinline__", "__inline__", "inline", "static",
                    "extern", "__host__", "__device__", "__grid_constant__", "__block_size__", "__nv_register_params__"}


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
                j = skip_balanced(code, j, "(", ")")
            continue
        if t.value == "[" and j + 1 < len(code) and code[j + 1].value == "[":
            j = skip_balanced(code, j, "[", "]")
            continue
        if t.value == "<" and last is not None:
            j = skip_balanced(code, j, "<", ">")
            continue
        if t.value == "(":
            return last
        last = t.value if t.kind == "id" else (last if t.value in ("*", "&", "::") else None)
        j += 1
    return None


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


def _asm_techniques(toks: list[Tok]) -> list[tuple[str, int, bool]]:
    """(technique, line, TF32 mma) for each inline-PTX body: asm("...") strings right after asm [volatile] (."""
    out = []
    for k, t in enumerate(toks):
        if t.kind == "id" and t.value in ("asm", "__asm__"):
            j = k + 1
            while j < len(toks) and toks[j].value != "(" and j < k + 4:  # asm volatile (
                j += 1
            end = skip_balanced(toks, j, "(", ")") if j < len(toks) and toks[j].value == "(" else j
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


def _loop_nests(code: list[Tok]) -> tuple[int, int | None]:
    """(outermost for/while loops, the line of a loop nest stepping by tiles) of a token stream: a
    fused CPU pass is one loop nest where a naive one has a loop per op; `i += TILE` inside another
    loop is cache blocking."""
    outer, end, blocked = 0, -1, None
    for k, t in enumerate(code):
        if t.value not in ("for", "while") or t.kind != "id" or k + 1 >= len(code) or code[k + 1].value != "(":
            continue
        close = skip_balanced(code, k + 1, "(", ")")
        header = [x.value for x in code[k + 1:close]]
        nested = k <= end
        if not nested:
            outer += 1
            body = close
            if body < len(code) and code[body].value == "{":
                end = skip_balanced(code, body, "{", "}") - 1
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
