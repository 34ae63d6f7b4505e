"""Static analysis of KernelBench candidates and references, for rubric_score.

Python is read with `ast` (python.py and its parts, py_*.py): what `ModelNew.forward` (and
everything it calls in the file) calls, split into custom code (the compiled extension; Triton,
CuTe DSL, TileLang, Numba and CuPy kernels; NVRTC / cuda-python launches; jiterator functions;
kernels built per shape and kept in a cache), PyTorch compute ops and glue (view, contiguous,
empty, ...); try/except and conditional fallbacks; imports of the reference; global or attribute
caches; threads, processes and sleeps; assignments to attributes of torch, time or the harness;
private CUDA streams.

The C++/CUDA sources (string literals handed to load_inline, CuPy, ...) are read with a small
tokenizer (cxx_tokens.py) that drops comments and string literals, so the word "stream" or
"torch::matmul" in a comment is never mistaken for code; cxx.py turns the tokens into facts
(kernels, launches, ATen calls, libraries, techniques) and findings. `#define` bodies are read too
(kernels often wrap `asm("cp.async ...")` in macros).

The other parts: ops.py (the operator vocabulary), model.py (what the analysis reports),
cxx_words.py (C++ identifiers and what they mean), languages.py (Python kernel languages),
fallbacks.py (PyTorch left in forward or called from C++).

Nothing here imports torch or runs the candidate.
"""

from __future__ import annotations

import ast
import re

from stitch_mcp.analysis.cxx import analyze_cxx, merge_cxx, regex_sources
from stitch_mcp.analysis.cxx_tokens import Tok, tokenize_cxx
from stitch_mcp.analysis.fallbacks import fallback_findings
from stitch_mcp.analysis.languages import KERNEL_PACKAGES, kernel_language, missing_package_message
from stitch_mcp.analysis.model import (DSL_LANGUAGES, PY, TECHNIQUE_LABELS, Analysis, CudaSource, OpUse, Technique,
                                       finding)
from stitch_mcp.analysis.ops import (ALIASES, COMPUTE, GLUE, HEAVY, NN_MODULES, PRECISION_CASTS, REDUCTION,
                                     canonical_op, op_class, op_weight)
from stitch_mcp.analysis.py_program import Program
from stitch_mcp.analysis.python import PyAnalyzer

__all__ = [
    # entry points
    "analyze_candidate", "reference_ops", "kernel_names", "missing_package_message",
    # results
    "PY", "Analysis", "OpUse", "Technique", "CudaSource", "TECHNIQUE_LABELS", "DSL_LANGUAGES",
    # operator vocabulary
    "ALIASES", "COMPUTE", "GLUE", "HEAVY", "NN_MODULES", "PRECISION_CASTS", "REDUCTION", "canonical_op", "op_class",
    "op_weight",
    # C++ and kernel languages
    "Tok", "tokenize_cxx", "analyze_cxx", "KERNEL_PACKAGES", "kernel_language",
]


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
        return _unparseable(source, exc, reference_source)
    py = PyAnalyzer(Program(tree, source), reference_source)
    a = py.run()
    if not a.has_modelnew:
        a.findings.append(finding("no_modelnew", "probable", "no class ModelNew: nothing to check",
                                  None, "", severity="warning"))
    a.ref_low_precision = py.ref_low_precision()
    merge_cxx(a, a.ref_low_precision)
    fallback_findings(a, ref_shares or [])
    return a


def _unparseable(source: str, exc: SyntaxError, reference_source: str | None) -> Analysis:
    """A candidate that is not valid Python: its C++ (found by regex) is still read, and the finding
    says forward cannot be cleared."""
    a = Analysis(parsed=False, parse_error=f"line {exc.lineno}: {exc.msg}")
    a.sources = regex_sources(source)
    merge_cxx(a, bool(reference_source and re.search(r"float16|bfloat16", reference_source)))
    a.findings.insert(0, finding(
        "unparseable", "probable",
        f"the candidate is not valid Python ({a.parse_error}); anti-hacking cannot be cleared because "
        "forward cannot be read", exc.lineno, (exc.text or "").strip(), severity="error"))
    return a


def reference_ops(reference_source: str) -> list[tuple[str, float, int | None]]:
    """Compute ops of a reference's Model.forward with a static weight (gemm 10, reduction 3,
    elementwise 1): (canonical op, weight, line)."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return []
    a = PyAnalyzer(Program(tree, reference_source), None, is_reference=True).run()
    out: dict[str, tuple[float, int | None]] = {}
    for o in a.torch_ops:
        w, line = out.get(o.op, (0.0, o.line))
        out[o.op] = (w + op_weight(o.op), line)
    return [(k, w, line) for k, (w, line) in out.items()]


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
