"""Three of the rubric's dimensions and their tables: anti_hacking, coverage (operator coverage)
and engineering (CUDA engineering), with the weights of all four, the techniques each workload needs
on each target and the advice for a missing one. The fourth, skill compliance, is in feedback.py.
"""

from __future__ import annotations

import re

from stitch_mcp import analysis as an
from stitch_mcp.models import CheckReport, Dimension, Evidence, Finding, KernelProfile
from stitch_mcp.score.keywords import keys_of
from stitch_mcp.score.runtime import RuntimeSplit


WEIGHTS = {"anti_hacking": 0.35, "cuda_engineering": 0.25, "operator_coverage": 0.25, "skill_compliance": 0.15}

EXPECTED = {
    "elementwise": ["vectorized_access", "grid_stride_loop"],
    "reduction": ["warp_primitives", "shared_memory", "vectorized_access"],
    "gemm": ["tensor_cores", "smem_tiling", "async_copy"],
}
# What a workload needs, by target: CUDA C++ (above), C++ for the CPU, and kernel languages whose
# compilers already vectorise, stage shared memory and pick grid mappings (Triton, CuTe DSL, TileLang).
EXPECTED_BY_TARGET = {
    "cuda": EXPECTED,
    "cpu": {"elementwise": ["cpu_simd", "cpu_threads"], "reduction": ["cpu_simd", "cpu_threads"],
            "gemm": ["cpu_cache_blocking", "cpu_simd", "cpu_threads"]},
    "dsl": {"elementwise": [], "reduction": ["warp_primitives"], "gemm": ["tensor_cores", "async_copy"]},
}
FUSION_KEY = {"cuda": "fusion", "dsl": "fusion", "cpu": "loop_fusion"}
TARGET_WORDS = {
    "cuda": "CUDA C++",
    "dsl": "a GPU kernel language (Triton, CuTe DSL, TileLang, ...)",
    "cpu": "C++ for the CPU: graded on SIMD vectorisation, multithreading, cache blocking and loop fusion",
}
LIBRARY_TECHNIQUES = {"cublas", "cublaslt", "cudnn", "cutlass"}

ADVICE = {
    "vectorized_access": "load and store 16 bytes per thread (float4 through reinterpret_cast, with a scalar "
                         "tail for the remainder) so each warp moves 512 B per instruction",
    "grid_stride_loop": "use a grid-stride loop with a grid of a few waves (about 4-8 blocks per SM) instead of "
                        "one thread per element",
    "smem_tiling": "stage operand tiles in shared memory and reuse them across the block (__syncthreads "
                   "between phases)",
    "tensor_cores": "use tensor cores: WMMA/MMA for the inner product, or call cuBLAS/cuBLASLt directly "
                    "(legitimate) instead of a scalar FMA loop",
    "async_copy": "overlap global loads with compute: cp.async / cuda::memcpy_async double buffering",
    "warp_primitives": "reduce within a warp with __shfl_down_sync before going through shared memory",
    "shared_memory": "combine per-warp partial results through shared memory",
    "fusion": "fuse the reference's consecutive ops into one kernel so intermediates never reach global memory",
    "cuda_graphs": "capture the launch sequence in a CUDA graph to remove launch overhead",
    "loop_unrolling": "unroll the inner loop (#pragma unroll) to raise instruction-level parallelism",
    "launch_bounds": "declare __launch_bounds__ so the compiler budgets registers for the block size",
    "cache_hints": "use streaming loads/stores (__ldcs/__stcs) for data read or written once",
    # C++ for the CPU
    "cpu_simd": "vectorise the inner loop: unit-stride loops the compiler can vectorise (-O3 -march=native, "
                "#pragma omp simd, no calls it cannot inline) or at::vec::Vectorized / AVX intrinsics",
    "cpu_threads": "split the outer loop across the cores with at::parallel_for (PyTorch's own thread pool; "
                   "-fopenmp links a second OpenMP runtime that competes with PyTorch's threads)",
    "cpu_cache_blocking": "block the loops so each tile of the operands stays in L1/L2 while it is reused "
                          "(tile i/j/k and pack the reused panel)",
    "loop_fusion": "fuse the elementwise steps into one loop so each element is read and written once, with no "
                   "intermediate tensors",
}
# Advice for the same technique where the candidate is written in a GPU kernel language
DSL_ADVICE = {
    "tensor_cores": "do the inner product with the language's matrix op (tl.dot, T.gemm, a CuTe MMA atom) so it "
                    "runs on tensor cores",
    "async_copy": "pipeline the K loop (num_stages >= 2 in triton.Config, T.Pipelined, a CuTe cp.async/TMA "
                  "pipeline) so loads overlap the math",
    "warp_primitives": "reduce with the language's block reduction (tl.sum / tl.max, T.reduce_*), one program "
                       "per row",
    "fusion": "fuse the reference's consecutive ops into one kernel so intermediates never reach global memory",
}

# analysis findings that mean the work still runs in PyTorch: a certain one leaves every op uncovered,
# and feedback asking to drop a fallback is judged by them
FALLBACK_CODES = {"pytorch_fallback", "aten_fallback", "partial_fallback", "try_except_fallback", "decoy_kernel",
                  "reference_reuse", "no_custom_kernel"}


def cite(line: int | None, text: str = "", file: str = an.PY) -> list[Evidence]:
    """A finding's evidence: the line (and its text) of a file that shows it; none when neither is known."""
    return [Evidence(file=file, line=line, text=(text or "").strip()[:200])] if (line or text) else []


def anti_hacking(a: an.Analysis, check: CheckReport | None, split: RuntimeSplit | None) -> Dimension:
    findings = [f for f in a.findings]
    # copies: the check's own findings keep their wording
    findings += [f.model_copy(update={"message": f"compile_and_check: {f.message}"})
                 for f in (check.integrity.findings if check else [])]
    ff = check.timing.floor_fraction if check else None
    if ff is not None and ff > 1.1 and not any("floor" in f.code for f in findings):
        findings.append(Finding(code="below_physical_floor", confidence="probable", severity="warning",
                                message=f"the measured time is {ff:.2f}x faster than the hardware floor allows "
                                        "(the larger of bytes / bandwidth and FLOPs / peak): work is hidden from the "
                                        "timer or skipped",
                                evidence=cite(None, "timing.floor_fraction", "check")))
    if split is not None and split.total > 0:
        py_share = split.share(split.pytorch)
        if py_share >= 0.5:
            conf = "certain" if split.share(split.custom) < 0.05 else "probable"
            top = sorted((r for r in split.rows if r[2] == "pytorch"), key=lambda r: -r[1])[:2]
            findings.append(Finding(
                code="decoy_kernel", confidence=conf, severity="error" if conf == "certain" else "warning",
                message=f"{py_share:.0%} of the candidate's GPU time is in PyTorch/ATen kernels the reference also "
                        f"runs; its own kernels take {split.share(split.custom):.0%}",
                evidence=[Evidence(file="profile_kernel", text=n[:200]) for n, _, _ in top]))
    cand_ms = check.timing.candidate.median_ms if check and check.timing.candidate else None
    if split is not None and cand_ms and not any(f.code == "decoy_kernel" for f in findings):
        # profile_kernel profiles the candidate's own kernels by default: compare one launch of each with
        # the measured time of a whole forward call
        own_us = sum(t / max(1, n) for (name, t, c), n in zip(split.rows, split.launches) if c == "custom")
        if own_us > 0 and own_us < 0.1 * cand_ms * 1000:
            findings.append(Finding(
                code="decoy_kernel", confidence="probable", severity="warning",
                message=f"the candidate's own kernels take about {own_us:.1f} us per launch but a forward call takes "
                        f"{cand_ms * 1000:.0f} us: most of the time is spent elsewhere (PyTorch?)",
                evidence=[Evidence(file="profile_kernel", text=f"{n}: {t:.1f} us") for n, t, c in split.rows
                          if c == "custom"][:3]))
    score = 1.0
    for f in findings:
        if f.severity == "info":
            continue
        score -= {"certain": 1.0, "probable": 0.5, "possible": 0.1}[f.confidence]
    if not a.parsed:
        score = 0.0
    return Dimension(score=max(0.0, min(1.0, score)), weight=WEIGHTS["anti_hacking"], findings=findings)


def coverage(a: an.Analysis, shares: list[tuple[str, float]], source: str,
             split: RuntimeSplit | None) -> tuple[Dimension, list[str], list[str]]:
    findings: list[Finding] = []
    covered, uncovered = [], []
    still_torch = a.uncovered_ops()
    fallback_certain = any(f.code in FALLBACK_CODES and f.confidence == "certain" for f in a.findings)
    score = 0.0
    for op, share in shares:
        uses = [o for o in a.torch_ops + a.aten_ops if o.op == op]
        if a.has_custom_code and op not in still_torch and not fallback_certain:
            covered.append(op)
            score += share
        else:
            uncovered.append(op)
            where = uses[0] if uses else None
            findings.append(Finding(
                code="uncovered_op", severity="warning" if share >= 0.2 else "info", confidence="certain" if uses
                else "probable",
                message=f"`{op}` ({share:.0%} of the reference's GPU time, {source}) still runs as PyTorch"
                        + (f" ({where.call})" if where else " (no custom code computes it)"),
                evidence=cite(where.line, where.text) if where else []))
    if not shares:
        score = 1.0 if a.has_custom_code and not still_torch else 0.0
        findings.append(Finding(code="no_reference_ops", severity="info", confidence="possible",
                                message="the reference's ops could not be read; coverage judged from the candidate"))
    for op in covered:
        findings.append(Finding(code="covered_op", severity="info", confidence="probable",
                                message=f"`{op}` is computed by custom code"))
    if split is not None and split.total > 0:
        own = split.share(split.custom + split.library)
        findings.append(Finding(code="custom_time_share", severity="info", confidence="certain",
                                message=f"custom kernels take {own:.0%} of the candidate's profiled GPU time",
                                evidence=[Evidence(file="profile_kernel", text=f"{n}: {t:.1f} us ({c})")
                                          for n, t, c in sorted(split.rows, key=lambda r: -r[1])[:4]]))
        score = min(score, own)
    return (Dimension(score=max(0.0, min(1.0, score)), weight=WEIGHTS["operator_coverage"], findings=findings),
            covered, uncovered)


def target_of(a: an.Analysis, check: CheckReport | None = None) -> str:
    """What the candidate is written for: the code says (CUDA C++, a GPU kernel language, C++ with no
    CUDA); with no custom code to tell, the machine it was checked on."""
    if a.target:
        return a.target
    device = (check.device or check.timing.device) if check else ""
    return "cpu" if device.lower().startswith("cpu") else "cuda"


def fusion_reason(a: an.Analysis, covered: list[str], target: str) -> str | None:
    """Why the candidate counts as fused (several reference ops in fewer kernels / loop nests), or None."""
    if len(covered) < 2:
        return None
    if target == "cpu":
        if 1 <= a.cpu_loop_nests < len(covered):
            return f"{', '.join(covered)} in {a.cpu_loop_nests} loop nest(s)"
        return None
    if a.kernels and len(a.kernels) < len(covered):
        return f"{', '.join(covered)} in {len(a.kernels)} kernel(s)"
    return None


def engineering(a: an.Analysis, shares: list[tuple[str, float]], covered: list[str], check: CheckReport | None,
                kprof: KernelProfile | None) -> tuple[Dimension, list[str]]:
    """The dimension and the expected techniques still missing (for feedback)."""
    findings: list[Finding] = []
    target = target_of(a, check)
    keys = a.technique_keys()
    fusion_key = FUSION_KEY[target]
    fused = fusion_reason(a, covered, target)
    if fused:
        keys.add(fusion_key)
        findings.append(Finding(code="technique", severity="info", confidence="probable",
                                message=f"{an.TECHNIQUE_LABELS[fusion_key]}: {fused}"))
    for t in a.techniques:
        findings.append(Finding(code="technique", severity="info", confidence="certain",
                                message=t.label, evidence=cite(t.line, t.text)))
    findings.append(Finding(code="target", severity="info", confidence="probable",
                            message=f"target: {TARGET_WORDS[target]}"))
    if not a.has_custom_code:
        findings.append(Finding(code="no_custom_code", severity="warning", confidence="certain",
                                message="no custom kernel or direct library call: nothing to credit"))
        return Dimension(score=0.0, weight=WEIGHTS["cuda_engineering"], findings=findings), []
    top = shares[0][0] if shares else None
    workload = an.op_class(top) if top else "elementwise"
    expected = list(EXPECTED_BY_TARGET[target][workload])
    if len(shares) >= 2 and workload != "gemm":
        expected.append(fusion_key)
    have = set(keys)
    if keys & LIBRARY_TECHNIQUES:
        have |= {"tensor_cores", "smem_tiling", "async_copy"}
    if target != "cpu":  # Nsight Compute's boundedness is GPU evidence
        _expect_from_profile(expected, kprof, workload, len(shares))
    found = [k for k in expected if k in have]
    missing = [k for k in expected if k not in have]
    advice = DSL_ADVICE if target == "dsl" else {}
    for k in missing:
        findings.append(Finding(code="missing_technique", severity="warning", confidence="probable",
                                message=f"{workload} workload: {an.TECHNIQUE_LABELS.get(k, k)} not used; "
                                        f"{advice.get(k) or ADVICE.get(k, '')}"))
    extras = len(keys - set(expected) - {"current_stream"})
    score = 0.3 + 0.5 * (len(found) / len(expected) if expected else 1.0) + 0.2 * min(1.0, extras / 3)
    eff = _efficiency(check, kprof)
    if eff is not None:
        score = 0.75 * score + 0.25 * eff
        findings.append(Finding(code="efficiency", severity="info", confidence="certain",
                                message=f"measured efficiency {eff:.0%} of the hardware limit"))
    findings.extend(_open_suggestions(kprof, have, fp32_task=not _low_precision(a)))
    return Dimension(score=max(0.0, min(1.0, score)), weight=WEIGHTS["cuda_engineering"], findings=findings), missing


def _expect_from_profile(expected: list[str], kprof: KernelProfile | None, workload: str, n_ops: int) -> None:
    bounds = {k.bound for k in kprof.kernels if k.bound} if kprof else set()
    if "memory-bound" in bounds and "vectorized_access" not in expected:
        expected.append("vectorized_access")
    if "compute-bound" in bounds and workload == "gemm" and "tensor_cores" not in expected:
        expected.append("tensor_cores")
    if "launch-bound" in bounds:
        expected.append("fusion" if n_ops >= 2 else "cuda_graphs")


def _low_precision(a: an.Analysis) -> bool:
    return a.ref_low_precision


_TF32_SUGGESTION = re.compile(r"TF32|BF16|FP16|half precision", re.I)
FP32_TENSOR_CORES = ("on this fp32 task keep fp32 accuracy: 3xTF32 (split each operand into a TF32 high part and "
                     "residual, three tensor-core products; CUTLASS OpMultiplyAddFastF32) or cuBLAS/cuBLASLt with "
                     "CUBLAS_COMPUTE_32F; plain TF32/BF16 is a precision downgrade under the rules")


def _open_suggestions(kprof: KernelProfile | None, have: set[str], fp32_task: bool) -> list[Finding]:
    """profile_kernel's suggestions the code does not act on yet, worded within the task's rules."""
    out = []
    for k in kprof.kernels if kprof else []:
        for s in k.suggestions[:3]:
            text = s.text
            asked = keys_of(text)
            if asked and not (asked & (have | {"no_fallback", "launch_config", "current_stream"})):
                if fp32_task and _TF32_SUGGESTION.search(text) and "3xTF32" not in text:
                    text = f"{text.rstrip('.')}; {FP32_TENSOR_CORES}"
                out.append(Finding(code="profile_suggestion_open", severity="info", confidence="possible",
                                   message=f"profile_kernel suggested: {text}", doc_id=s.doc_id,
                                   evidence=cite(None, f"{k.name}: {s.metric} {s.value}", "profile_kernel")))
    return out


def _efficiency(check: CheckReport | None, kprof: KernelProfile | None) -> float | None:
    ff = check.timing.floor_fraction if check else None
    if ff is not None:
        return max(0.0, min(1.0, ff))
    vals = [k.roofline_pct / 100 for k in (kprof.kernels if kprof else []) if k.roofline_pct is not None]
    return max(0.0, min(1.0, sum(vals) / len(vals))) if vals else None
