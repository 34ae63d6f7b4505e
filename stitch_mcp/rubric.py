"""rubric_score: grade a candidate (stitch_mcp.score), store the report, route the next step
(stitch_mcp.loop). Its own module so that scoring and routing need not import each other."""

from __future__ import annotations

from stitch_mcp.jobs import Progress
from stitch_mcp.models import RubricReport
from stitch_mcp.score import assess, summarize


def rubric_score(*, candidate: str | None = None, candidate_id: str | None = None, reference: str | None = None,
                 task_id: str | None = None, feedback: list[str] | None = None, judge: str = "none",
                 parent_candidate_id: str | None = None, session: str | None = None,
                 progress: Progress | None = None) -> RubricReport:
    """Score a candidate, store the rubric and the routing decision it leads to.

    parent_candidate_id: the candidate this one was written from (default: the one this session
    submitted last on the task); its stored feedback is what skill compliance grades."""
    from stitch_mcp.loop import route_after
    from stitch_mcp.sources import resolve_candidate, resolve_task
    from stitch_mcp.store import get_workspace

    ws = get_workspace()
    if candidate_id and not candidate and not reference and not task_id:
        task = ws.task(ws.candidate(candidate_id).task_id)
    else:
        task = resolve_task(reference, task_id)
    cand = resolve_candidate(candidate, candidate_id, task, parent_id=parent_candidate_id, session=session)
    if progress is not None:
        progress.update(1, 3, "static analysis")
    report = assess(task, cand, feedback, session=session)
    if progress is not None:
        progress.update(2, 3, "routing")
    report.route = route_after(task.task_id, cand.candidate_id, rubric=report, session=session)
    if judge != "none":
        report.judge = "client judge is requested through the MCP tool (judge='client')"
    report.summary = summarize(report)
    ws.add_report("rubric", report, task_id=task.task_id, candidate_id=cand.candidate_id)
    if progress is not None:
        progress.update(3, 3, "done")
    return report
