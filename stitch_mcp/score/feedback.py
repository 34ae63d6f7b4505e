"""The skill-compliance dimension: each feedback item checked against the diff from the parent
candidate (done, not done, contradicted or unclear, with the line that shows it), and
default_feedback, the items a candidate was meant to address.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from stitch_mcp import analysis as an
from stitch_mcp.models import CandidateRecord, Dimension, Finding
from stitch_mcp.score.dimensions import (
    FALLBACK_CODES,
    FUSION_KEY,
    WEIGHTS,
    cite,
    fusion_reason,
    target_of,
)
from stitch_mcp.score.keywords import KNOWN_TAGS, NEGATIVE, keys_of


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
