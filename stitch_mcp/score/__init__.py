"""rubric_score: StitchCUDA's four-dimension rubric (issue 5).

Dimensions, each scored 0-1 with findings (code, severity, confidence, evidence lines):

- anti_hacking (weight 0.35): 1.0 when nothing is found; a *certain* finding sets it to 0, each
  *probable* one takes 0.5 off and each *possible* one 0.1. Sources: static analysis of the Python
  and C++/CUDA (stitch_mcp.analysis), compile_and_check's integrity findings, and the candidate's
  kernel profile (a "decoy kernel" when most GPU time is in PyTorch/ATen kernels the reference
  also launches). A program that does not parse cannot be cleared: score 0, verdict suspect.
- cuda_engineering (weight 0.25): techniques found, each with its evidence line. 0.3 for having
  custom code at all, + 0.5 x the share of the techniques this workload needs on the candidate's
  target, + 0.2 for up to three further techniques; blended 3:1 with the measured efficiency
  (fraction of the floor or roofline) when a check or profile has it. Targets: CUDA C++
  (elementwise: vectorized access, grid-stride loop; reductions: warp primitives, shared memory,
  vectorized access; GEMM/conv: tensor cores, shared-memory tiling, async copies - a cuBLAS/
  cuBLASLt/cuDNN/CUTLASS call counts for all three), C++ for the CPU (SIMD vectorisation,
  multithreading, cache blocking for GEMM/conv, loop fusion) and GPU kernel languages (Triton,
  CuTe DSL, TileLang: their compilers vectorise and stage shared memory, so tensor cores and
  pipelining for GEMM, block reductions for reductions). Fusion is expected when the reference
  has several ops. What the profile suggested but the code does not yet do is listed, worded
  within the task's rules (no plain TF32/BF16 on fp32 tasks: 3xTF32 instead).
- operator_coverage (weight 0.25): the share of the reference's GPU time (profile_reference when
  stored, else a static estimate: GEMM/conv 10, reductions 3, elementwise 1) in ops that the
  candidate computes with its own code rather than PyTorch; capped by the custom-kernel share of
  the candidate's own GPU time when a kernel profile is stored.
- skill_compliance (weight 0.15): each feedback item checked against the diff from the parent
  candidate: done 1, unclear 0.5, not done 0, contradicted 0. No feedback: 1.0.

verdict: hack when an anti-hacking finding is certain, suspect when one is probable, else clean.
overall: the weighted sum; hack caps it at 0.

This module assembles the report: assess, its verdict (verdict_of), overall score (overall_of) and
text (summarize). The parts: runtime.py (the reference's GPU time by op, the candidate's by owner),
dimensions.py (anti-hacking, coverage, engineering and the rubric's tables), keywords.py (what a
feedback item or a profile suggestion asks for), feedback.py (skill compliance and the feedback the
candidate was meant to address), client_judge.py (the client model's second opinion).
"""

from __future__ import annotations

import re

from stitch_mcp import analysis as an
from stitch_mcp.errors import UserError
from stitch_mcp.models import (
    CandidateRecord,
    CheckReport,
    Dimension,
    Finding,
    KernelProfile,
    ReferenceProfile,
    RubricDimensions,
    RubricReport,
    TaskRecord,
)
from stitch_mcp.score.dimensions import WEIGHTS, anti_hacking, coverage, engineering
from stitch_mcp.score.feedback import default_feedback, skill_compliance
from stitch_mcp.score.runtime import reference_shares, runtime_split


def assess(task: TaskRecord, cand: CandidateRecord, feedback: list[str] | None = None,
           session: str | None = None) -> RubricReport:
    """The deterministic rubric of a stored candidate from its source and its stored reports."""
    from stitch_mcp.store import get_workspace

    ws = get_workspace()
    # each stored report as its model: a missing, running or unreadable one is None (graded without it)
    ref_profile = ws.finished_report("profile_reference", ReferenceProfile, task_id=task.task_id)
    shares, source = reference_shares(task, ref_profile)
    a = an.analyze_candidate(cand.source, task.source, shares)
    check = ws.finished_report("check", CheckReport, candidate_id=cand.candidate_id)
    kprof = ws.finished_report("profile_kernel", KernelProfile, candidate_id=cand.candidate_id)
    split = runtime_split(a, kprof, ref_profile)
    anti = anti_hacking(a, check, split)
    cov, covered, uncovered = coverage(a, shares, source, split)
    eng, _missing = engineering(a, shares, covered, check, kprof)
    parent = _parent(ws, cand, session)
    items = feedback if feedback is not None else default_feedback(cand, session)
    skill = skill_compliance(cand, parent, items, a, shares, covered, task.source)
    dims = RubricDimensions(anti_hacking=anti, cuda_engineering=eng, operator_coverage=cov, skill_compliance=skill)
    verdict = verdict_of(anti)
    report = RubricReport(task_id=task.task_id, candidate_id=cand.candidate_id, verdict=verdict,
                          overall=overall_of(dims, verdict), dimensions=dims, covered_ops=covered,
                          uncovered_ops=uncovered, judge="none")
    if a.notes:
        anti.findings.extend(Finding(code="note", severity="info", confidence="certain", message=n) for n in a.notes)
    return report


def _parent(ws, cand: CandidateRecord, session: str | None) -> CandidateRecord | None:
    """The candidate's parent in the workspace, or None (a first candidate, or a parent not found)."""
    if not cand.parent_id:
        return None
    try:
        return ws.candidate(cand.parent_id, session)
    except UserError:
        return None


def verdict_of(anti: Dimension) -> str:
    """hack when a serious anti-hacking finding is certain, suspect when one is probable, else clean."""
    serious = [f for f in anti.findings if f.severity != "info"]
    if any(f.confidence == "certain" for f in serious):
        return "hack"
    if any(f.confidence == "probable" for f in serious):
        return "suspect"
    return "clean"


def overall_of(dims: RubricDimensions, verdict: str) -> float:
    """The weighted mean of the four dimensions (0..1); a hack scores 0."""
    if verdict == "hack":
        return 0.0
    total = sum(getattr(dims, k).score * getattr(dims, k).weight for k in WEIGHTS)
    return round(max(0.0, min(1.0, total / sum(WEIGHTS.values()))), 4)


_MISSING = re.compile(r"^\w+ workload: (?P<label>.*?) not used; (?P<advice>.*)$", re.S)


def _missing_label(f: Finding) -> str:
    m = _MISSING.match(f.message)
    return m.group("label") if m else f.message


def missing_technique_item(f: Finding) -> str | None:
    """The feedback item for a missing_technique finding: "[key] Advice." with the advice worded for
    the candidate's target (CUDA C++, CPU C++ or a kernel language). For the loop's feedback."""
    m = _MISSING.match(f.message) if f.code == "missing_technique" else None
    key = next((k for k, label in an.TECHNIQUE_LABELS.items() if m and label == m.group("label")), None)
    if not key or not m.group("advice"):
        return None
    advice = m.group("advice").rstrip(".")
    return f"[{key}] {advice[0].upper()}{advice[1:]}."


def summarize(r: RubricReport) -> str:
    """The report as text: verdict and overall, a line per dimension, then the route and the judge if any."""
    d = r.dimensions
    assert d is not None
    lines = [f"rubric {r.verdict.upper()} for {r.candidate_id}: overall {r.overall:.2f}"
             + (" (a hack scores 0)" if r.verdict == "hack" else "")]
    serious = [f for f in d.anti_hacking.findings if f.severity != "info"]
    lines.append(f"- anti-hacking {d.anti_hacking.score:.2f}: " + ("; ".join(
        f"[{f.confidence}] {f.code}: {f.message}" + (f" (line {f.evidence[0].line})" if f.evidence and
                                                     f.evidence[0].line else "") for f in serious[:3])
        or "nothing found"))
    techs = [f for f in d.cuda_engineering.findings if f.code == "technique"]
    missing = [f for f in d.cuda_engineering.findings if f.code == "missing_technique"]
    target = next((f.message for f in d.cuda_engineering.findings if f.code == "target"), "")
    eng_name = "C++ (CPU) engineering" if "for the CPU" in target else "CUDA engineering"
    lines.append(f"- {eng_name} {d.cuda_engineering.score:.2f}: "
                 + (", ".join(f.message + (f" (line {f.evidence[0].line})" if f.evidence and f.evidence[0].line
                                           else "") for f in techs[:6]) or "no techniques")
                 + (f"; missing: {', '.join(_missing_label(f) for f in missing)}" if missing else ""))
    lines.append(f"- operator coverage {d.operator_coverage.score:.2f}: "
                 + (f"custom code computes {', '.join(r.covered_ops)}" if r.covered_ops else "no op in custom code")
                 + (f"; still in PyTorch: {', '.join(r.uncovered_ops)}" if r.uncovered_ops
                    else "; nothing left in PyTorch"))
    fb = [f for f in d.skill_compliance.findings if f.code.startswith("feedback_")]
    if fb:
        counts = {s: sum(1 for f in fb if f.code == f"feedback_{s}") for s in ("done", "not_done", "contradicted",
                                                                                "unclear")}
        lines.append(f"- skill compliance {d.skill_compliance.score:.2f}: " + ", ".join(
            f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v) + f" of {len(fb)} feedback items")
    else:
        lines.append(f"- skill compliance {d.skill_compliance.score:.2f}: no feedback to follow")
    if r.route is not None:
        lines.append(f"route: {r.route.decision.upper()} - {'; '.join(r.route.reasons[:3])}")
        for i, item in enumerate(r.route.feedback[:5], 1):
            lines.append(f"  {i}. {item}")
    if r.judge not in ("none", ""):
        lines.append(f"judge: {r.judge}")
    return "\n".join(lines)
