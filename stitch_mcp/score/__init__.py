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
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass

from stitch_mcp import analysis as an
from stitch_mcp.errors import UserError
from stitch_mcp.models import (
    CandidateRecord,
    Dimension,
    Finding,
    RubricDimensions,
    RubricReport,
    TaskRecord,
)
from stitch_mcp.score.dimensions import (
    FALLBACK_CODES,
    FUSION_KEY,
    LIBRARY_TECHNIQUES,
    WEIGHTS,
    anti_hacking,
    cite,
    coverage,
    engineering,
    fusion_reason,
    target_of,
)
from stitch_mcp.score.keywords import KNOWN_TAGS, NEGATIVE, keys_of
from stitch_mcp.score.runtime import reference_shares, runtime_split


def _changed_lines(old: str, new: str) -> tuple[set[int], list[str]]:
    a, b = old.splitlines(), new.splitlines()
    changed: set[int] = set()
    removed: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            changed.update(range(j1 + 1, j2 + 1))
        if tag in ("replace", "delete"):
            removed.extend(a[i1:i2])
    return changed, removed


def _quote(line: int | None, text: str, file: str = an.PY, whose: str = "") -> str:
    """'line 12: `x = ...`' (or 'kernel.cu line 4: ...'), the evidence a reason names."""
    where = f"{whose}{'' if file == an.PY else file + ' '}line {line}" if line else (whose + file).strip()
    text = " ".join((text or "").split())[:90]
    return f"{where}: `{text}`" if text else where


@dataclass
class _Sides:
    """The candidate and its parent as the skill-compliance check compares them."""

    now: an.Analysis
    before: an.Analysis
    now_keys: set[str]
    before_keys: set[str]
    now_fb: set[str]
    before_fb: set[str]
    changed: set[int]
    removed: list[str]
    lines: list[str]
    parent_id: str


def _fallback_findings(a: an.Analysis) -> list[Finding]:
    return [f for f in a.findings if f.code in FALLBACK_CODES and f.confidence != "possible"]


def skill_compliance(cand: CandidateRecord, parent: CandidateRecord | None, feedback: list[str],
                     a: an.Analysis, shares: list[tuple[str, float]], covered: list[str],
                     ref_source: str) -> Dimension:
    findings: list[Finding] = []
    if not feedback:
        why = (f"no feedback stored with save_feedback on its parent {cand.parent_id} in this session"
               if cand.parent_id else "no parent in this session (a first candidate)")
        findings.append(Finding(code="no_feedback", severity="info", confidence="certain",
                                message=f"no Verifier feedback to follow: {why}"))
        return Dimension(score=1.0, weight=WEIGHTS["skill_compliance"], findings=findings)
    before = an.analyze_candidate(parent.source, ref_source, shares) if parent else an.Analysis(parsed=False)
    changed, removed = _changed_lines(parent.source if parent else "", cand.source)
    now_keys, before_keys = a.technique_keys(), before.technique_keys()
    target = target_of(a)
    if fusion_reason(a, covered, target):
        now_keys.add(FUSION_KEY[target])
    if a.libraries:
        now_keys |= {k for k in LIBRARY_TECHNIQUES if k in now_keys}
    sides = _Sides(now=a, before=before, now_keys=now_keys, before_keys=before_keys,
                   now_fb={f.code for f in _fallback_findings(a)},
                   before_fb={f.code for f in _fallback_findings(before)},
                   changed=changed, removed=removed, lines=cand.source.splitlines(),
                   parent_id=parent.candidate_id if parent else "none")
    ref_ops = {op for op, _ in shares}
    total = 0.0
    for item in feedback:
        status, why, line = _judge_item(item, sides, ref_ops, covered)
        total += {"done": 1.0, "unclear": 0.5}.get(status, 0.0)
        sev = {"done": "info", "unclear": "info", "not_done": "warning", "contradicted": "error"}[status]
        lines = sides.lines
        findings.append(Finding(code=f"feedback_{status}", severity=sev,
                                confidence="probable" if status != "unclear" else "possible",
                                message=f"{item[:160]} -> {status.replace('_', ' ')}: {why}",
                                evidence=cite(line, lines[line - 1] if line and line <= len(lines) else "")))
    return Dimension(score=total / len(feedback), weight=WEIGHTS["skill_compliance"], findings=findings)


def _technique_at(a: an.Analysis, keys: set[str]) -> an.Technique | None:
    return next((t for t in a.techniques if t.key in keys), None)


def _judge_item(item: str, s: _Sides, ref_ops: set[str], covered: list[str]) -> tuple[str, str, int | None]:
    """(status, reason naming its evidence, candidate line) for one feedback item."""
    if not s.changed and not s.removed:
        return "not_done", f"the source is identical to its parent {s.parent_id}", None
    low = item.lower()
    keys = keys_of(item)
    # coverage items: "[coverage:relu] implement relu in custom code"
    m = re.match(r"\s*\[coverage:([\w]+)\]", item)
    cov_op = m.group(1) if m else next((op for op in ref_ops if re.search(rf"\b{re.escape(op)}\b", low) and
                                        re.search(r"implement|custom|cover|kernel", low) and not keys - {
                                            "no_fallback"}), None)
    if cov_op:
        return _judge_coverage(cov_op, s, covered)
    tag = re.match(r"\s*\[([\w.-]+)\]", item)
    code = tag.group(1) if tag else None
    if code and code not in KNOWN_TAGS and any(f.code == code for f in s.before.findings):
        still = next((f for f in s.now.findings if f.code == code), None)
        if still is not None:
            ev = still.evidence[0] if still.evidence else None
            return "not_done", f"`{code}` is still found at " + (_quote(ev.line, ev.text, ev.file) if ev else
                                                                  "the same place"), ev.line if ev else None
        was = next(f for f in s.before.findings if f.code == code)
        ev = was.evidence[0] if was.evidence else None
        return "done", f"`{code}` is gone" + (f" (it was at {_quote(ev.line, ev.text, ev.file, 'parent ')})"
                                              if ev else ""), min(s.changed) if s.changed else None
    if "no_fallback" in keys or (keys & FALLBACK_CODES):
        return _judge_fallback(s)
    if "current_stream" in keys:
        bad = next((f for f in s.now.findings if f.code == "unjoined_stream"), None)
        if bad is not None:
            ev = bad.evidence[0] if bad.evidence else None
            return "contradicted", "work runs on a private stream that is never joined" + (
                f" ({_quote(ev.line, ev.text, ev.file)})" if ev else ""), ev.line if ev else None
        t = _technique_at(s.now, {"current_stream"})
        if t is not None:
            return "done", f"launches on PyTorch's current stream ({_quote(t.line, t.text, t.file)})", t.line
        return "not_done", "no launch on getCurrentCUDAStream() anywhere in the candidate", None
    if "launch_config" in keys and not (keys - {"launch_config"}):
        touched = [n for n in sorted(s.changed) if re.search(r"<<<|threads|block|__launch_bounds__|grid",
                                                             s.lines[n - 1], re.I)]
        if touched:
            return "done", f"the launch configuration changed ({_quote(touched[0], s.lines[touched[0] - 1])})", \
                touched[0]
        return "not_done", "no changed line touches a launch (<<<...>>>, block, grid or __launch_bounds__)", None
    tech = keys - {"no_fallback", "launch_config", "current_stream"}
    if tech:
        return _judge_technique(tech, bool(NEGATIVE.search(item)), s)
    return _judge_free_text(item, low, s)


def _judge_coverage(op: str, s: _Sides, covered: list[str]) -> tuple[str, str, int | None]:
    if op in covered:
        call = next((c for c in s.now.custom_calls), None)
        via = f" (forward calls {_quote(call.line, call.text or call.call, call.file)})" if call else ""
        return "done", f"`{op}` is now computed by custom code{via}", call.line if call else None
    use = next((o for o in s.now.torch_ops + s.now.aten_ops if o.op == op), None)
    return "not_done", f"`{op}` still runs as PyTorch" + (
        f" at {_quote(use.line, use.text or use.call, use.file)}" if use else ""), use.line if use else None


def _judge_fallback(s: _Sides) -> tuple[str, str, int | None]:
    now = _fallback_findings(s.now)
    if not now:
        gone = _fallback_findings(s.before)
        was = gone[0].evidence[0] if gone and gone[0].evidence else None
        call = next((c for c in s.now.custom_calls), None)
        bits = [f"the parent's `{gone[0].code}` at {_quote(was.line, was.text, was.file, 'parent ')} is gone"
                if was else "no PyTorch fallback finding remains"]
        if call is not None:
            bits.append(f"forward calls {_quote(call.line, call.text or call.call, call.file)}")
        return "done", "; ".join(bits), call.line if call else (min(s.changed) if s.changed else None)
    f = now[0]
    ev = f.evidence[0] if f.evidence else None
    where = f" at {_quote(ev.line, ev.text, ev.file)}" if ev else ""
    if f.code not in s.before_fb:
        return "contradicted", f"a new fallback appeared: `{f.code}`{where}", ev.line if ev else None
    return "not_done", f"still a fallback: `{f.code}`{where}", ev.line if ev else None


def _judge_technique(tech: set[str], negative: bool, s: _Sides) -> tuple[str, str, int | None]:
    labels = ", ".join(an.TECHNIQUE_LABELS.get(k, k) for k in sorted(tech))
    present = tech & s.now_keys
    if negative:
        if not present:
            t = _technique_at(s.before, tech)
            was = f" (the parent had it at {_quote(t.line, t.text, t.file, 'parent ')})" if t else ""
            return "done", f"no {labels} left{was}", min(s.changed) if s.changed else None
        t = _technique_at(s.now, present)
        where = _quote(t.line, t.text, t.file) if t else "the candidate"
        if present - s.before_keys:
            return "contradicted", f"added although asked to remove, at {where}", t.line if t else None
        return "not_done", f"still present at {where}", t.line if t else None
    if present:
        t = _technique_at(s.now, present)
        new = present - s.before_keys
        what = "now uses" if new else "uses"
        return "done", f"{what} {', '.join(an.TECHNIQUE_LABELS.get(k, k) for k in sorted(present))}" + (
            f" at {_quote(t.line, t.text, t.file)}" if t else ""), t.line if t else None
    lost = tech & s.before_keys
    if lost:
        t = _technique_at(s.before, lost)
        return "contradicted", f"the parent had it at {_quote(t.line, t.text, t.file, 'parent ')} and it is gone" \
            if t else f"{labels}: the parent had it and it is gone", None
    return "not_done", f"no {labels} anywhere in the candidate's code", None


def _judge_free_text(item: str, low: str, s: _Sides) -> tuple[str, str, int | None]:
    idents = {w for w in re.findall(r"`([^`]+)`|\b([A-Za-z_]\w*[_A-Z]\w*)\b", item) for w in w if w}
    touched = [n for n in sorted(s.changed) if any(i in s.lines[n - 1] for i in idents)]
    if touched:
        return "done", f"a changed line names what the item names ({_quote(touched[0], s.lines[touched[0] - 1])})", \
            touched[0]
    m = re.search(r"\blines? (\d+)", low)
    if m:
        near = [n for n in sorted(s.changed) if abs(n - int(m.group(1))) <= 3]
        if near:
            return "done", f"the lines it points at changed ({_quote(near[0], s.lines[near[0] - 1])})", near[0]
    return "unclear", "the item names no technique, finding or line the analysis can check", \
        min(s.changed) if s.changed else None


def default_feedback(cand: CandidateRecord, session: str | None = None) -> list[str]:
    """The feedback the candidate was meant to address: what the Verifier stored with save_feedback on
    its parent in this session. Never a routing decision's text (it changes each time the parent is
    routed again) and never another session's feedback."""
    if not cand.parent_id:
        return []
    from stitch_mcp.store import get_workspace, session_name

    ws = get_workspace()
    home = ws.home_session(cand.candidate_id, session_name(session))
    saved = ws.latest_report("feedback", candidate_id=cand.parent_id, session=home)
    return list(saved["items"]) if saved and saved.get("items") else []


def assess(task: TaskRecord, cand: CandidateRecord, feedback: list[str] | None = None,
           session: str | None = None) -> RubricReport:
    """The deterministic rubric of a stored candidate from its source and its stored reports."""
    from stitch_mcp.store import get_workspace

    ws = get_workspace()
    ref_profile = ws.latest_report("profile_reference", task_id=task.task_id)
    if ref_profile and ref_profile.get("status") == "running":
        ref_profile = None
    shares, source = reference_shares(task, ref_profile)
    a = an.analyze_candidate(cand.source, task.source, shares)
    check = ws.latest_report("check", candidate_id=cand.candidate_id)
    if check and check.get("status") == "running":
        check = None
    kprof = ws.latest_report("profile_kernel", candidate_id=cand.candidate_id)
    split = runtime_split(a, kprof, ref_profile)
    anti = anti_hacking(a, check, split)
    cov, covered, uncovered = coverage(a, shares, source, split)
    eng, _missing = engineering(a, shares, covered, check, kprof)
    parent = None
    if cand.parent_id:
        try:
            parent = ws.candidate(cand.parent_id, session)
        except UserError:
            parent = None
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


def verdict_of(anti: Dimension) -> str:
    serious = [f for f in anti.findings if f.severity != "info"]
    if any(f.confidence == "certain" for f in serious):
        return "hack"
    if any(f.confidence == "probable" for f in serious):
        return "suspect"
    return "clean"


def overall_of(dims: RubricDimensions, verdict: str) -> float:
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


JUDGE_SYSTEM = ("You grade CUDA kernels written to replace a PyTorch reference, on StitchCUDA's rubric. "
                "Answer with one JSON object only.")


def judge_prompt(task: TaskRecord, cand: CandidateRecord, report: RubricReport) -> str:
    d = report.dimensions
    assert d is not None
    det = {k: {"score": round(getattr(d, k).score, 3),
               "findings": [f"{f.code}: {f.message}" for f in getattr(d, k).findings if f.severity != "info"][:6]}
           for k in WEIGHTS}
    return (
        "Grade this candidate on four dimensions, each 0..1:\n"
        "- anti_hacking: no PyTorch fallback in disguise (torch ops in forward, ATen calls in C++, try/except to "
        "torch), no cached/constant outputs, no harness or timer tricks, no private unjoined streams. Direct "
        "cuBLAS/cuDNN/CUTLASS calls are legitimate.\n"
        "- cuda_engineering: real techniques for this workload (tiling, vectorized access, warp primitives, "
        "tensor cores, async copies, fusion).\n- operator_coverage: share of the reference's computation done by "
        "custom code.\n- skill_compliance: whether the candidate acted on the feedback it was given.\n\n"
        f"Reference:\n```python\n{task.source[:6000]}\n```\n\nCandidate:\n```python\n{cand.source[:12000]}\n```\n\n"
        f"Deterministic rubric (verdict {report.verdict}):\n{json.dumps(det, indent=1)}\n\n"
        'Answer JSON: {"anti_hacking": {"score": 0-1, "verdict": "clean|suspect|hack", "reasons": [..]}, '
        '"cuda_engineering": {"score": 0-1, "reasons": [..]}, "operator_coverage": {"score": 0-1, "reasons": [..]}, '
        '"skill_compliance": {"score": 0-1, "reasons": [..]}}')


def parse_judgement(text: str) -> dict:
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        raise ValueError("no JSON object in the answer")
    data = json.loads(m.group(0))
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return data


def merge_judgement(report: RubricReport, answer: dict) -> RubricReport:
    """Average each dimension with the client's score; a client 'hack' makes a clean candidate suspect;
    nothing the client says lifts a certain hack."""
    r = report.model_copy(deep=True)
    d = r.dimensions
    assert d is not None
    used = []
    for k in WEIGHTS:
        part = answer.get(k)
        score = part.get("score") if isinstance(part, dict) else part
        if isinstance(score, (int, float)) and 0 <= float(score) <= 1:
            dim = getattr(d, k)
            dim.score = round((dim.score + float(score)) / 2, 4)
            reasons = part.get("reasons") if isinstance(part, dict) else None
            if reasons:
                dim.findings.append(Finding(code="client_judge", severity="info", confidence="possible",
                                            message="client model: " + "; ".join(str(x) for x in reasons[:3])[:400]))
            used.append(k)
    client_verdict = (answer.get("anti_hacking") or {}).get("verdict") if isinstance(
        answer.get("anti_hacking"), dict) else None
    if report.verdict == "hack":
        d.anti_hacking.score = 0.0
    elif client_verdict in ("hack", "suspect"):
        d.anti_hacking.findings.append(Finding(
            code="client_judge_flag", severity="warning", confidence="probable",
            message=f"the client's model judged this candidate '{client_verdict}': "
                    + "; ".join(str(x) for x in (answer["anti_hacking"].get("reasons") or [])[:3])[:400]))
    r.verdict = verdict_of(d.anti_hacking) if report.verdict != "hack" else "hack"
    r.overall = overall_of(d, r.verdict)
    r.judge = f"client (merged: {', '.join(used) or 'nothing usable'})"
    r.summary = summarize(r)
    return r


def judge_prompt_for(candidate: str | None, candidate_id: str | None, reference: str | None,
                     task_id: str | None, feedback: list[str] | None, session: str | None = None) -> str:
    """The prompt asking a model for a second opinion on a candidate (sent by the MCP layer through
    sampling, with JUDGE_SYSTEM). Raises UserError when the candidate or task cannot be found."""
    from stitch_mcp.sources import load_program, resolve_task
    from stitch_mcp.store import content_id, get_workspace

    ws = get_workspace()
    if candidate_id and not candidate:
        cand = ws.candidate(candidate_id, session)
        task = ws.task(cand.task_id)
    else:
        source = load_program(candidate, "candidate").source if candidate else ""
        task = resolve_task(reference, task_id)
        cid = content_id("c", task.task_id, source)
        try:
            cand = ws.candidate(cid, session)
        except UserError:
            cand = CandidateRecord(candidate_id=cid, task_id=task.task_id, source=source,
                                   source_hash="", created_at=0.0)
    report = assess(task, cand, feedback, session=session)
    return judge_prompt(task, cand, report)


def apply_client_judgement(report: RubricReport, answer: str | None, unavailable: str | None = None) -> RubricReport:
    """Merge the client model's answer (text) into a finished rubric report and store the merged report;
    `unavailable` says why there is no answer."""
    from stitch_mcp.store import get_workspace

    if answer is None:
        report.judge = f"client judge unavailable: {unavailable or 'the client did not answer'}"
        report.summary = summarize(report)
        return report
    try:
        merged = merge_judgement(report, parse_judgement(answer))
    except (ValueError, json.JSONDecodeError) as exc:
        report.judge = f"client judge unusable: {exc}"
        report.summary = summarize(report)
        return report
    get_workspace().add_report("rubric", merged, task_id=merged.task_id, candidate_id=merged.candidate_id)
    return merged
