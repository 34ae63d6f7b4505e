"""rubric_score's second opinion from the client's model: the prompt (JUDGE_SYSTEM, judge_prompt,
judge_prompt_for), reading the answer (parse_judgement) and merging it into the deterministic report
(merge_judgement, apply_client_judgement). Plain text and models: mcp_judge.py sends the prompt
through MCP sampling.
"""

from __future__ import annotations

import json
import re

from stitch_mcp.errors import UserError
from stitch_mcp.models import CandidateRecord, Finding, RubricReport, TaskRecord
from stitch_mcp.score import assess, overall_of, summarize, verdict_of
from stitch_mcp.score.dimensions import WEIGHTS


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
