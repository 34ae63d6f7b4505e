"""JSON views of the workspace served as stitch:// resources."""

from __future__ import annotations

import json

from stitch_mcp.errors import NotFound
from stitch_mcp.store import get_workspace


def task_json(task_id: str) -> str:
    ws = get_workspace()
    task = ws.task(task_id)
    return json.dumps({**task.model_dump(), "profile": ws.latest_report("profile_reference", task_id=task_id),
                       "candidates": [c.candidate_id for c in ws.candidates(task_id)]}, indent=1)


def _verdicts(candidate_id: str) -> dict:
    ws = get_workspace()
    check = ws.latest_report("check", candidate_id=candidate_id) or {}
    rubric = ws.latest_report("rubric", candidate_id=candidate_id) or {}
    return {"verdict": check.get("verdict"), "speedup_vs_eager": check.get("speedup_vs_eager"),
            "speedup_vs_compile": check.get("speedup_vs_compile"), "rubric_verdict": rubric.get("verdict"),
            "rubric_overall": rubric.get("overall")}


def _latest_routes(task_id: str) -> dict[str, object]:
    latest: dict[str, object] = {}
    for candidate_id, route in get_workspace().routes(task_id):
        latest[candidate_id] = route
    return latest


def history_json(task_id: str) -> str:
    ws = get_workspace()
    task = ws.task(task_id)
    routes: dict[str, list] = {}
    for candidate_id, route in ws.routes(task_id):
        routes.setdefault(candidate_id, []).append(route.model_dump())
    rows = []
    for c in ws.candidates(task_id):
        feedback = ws.latest_report("feedback", candidate_id=c.candidate_id)
        rows.append({"candidate_id": c.candidate_id, "parent_id": c.parent_id, "created_at": c.created_at,
                     **_verdicts(c.candidate_id), "routes": routes.get(c.candidate_id, []),
                     "saved_feedback": (feedback or {}).get("items")})
    return json.dumps({"task_id": task_id, "plan": task.plan, "candidates": rows}, indent=1)


def best_candidate_id(task_id: str) -> str | None:
    """The fastest candidate whose latest routing decision is accept (accept needs a passing check)."""
    best = None
    for cid, route in _latest_routes(task_id).items():
        if route.decision != "accept":
            continue
        v = _verdicts(cid)
        if v["verdict"] != "pass":
            continue
        speedup = v["speedup_vs_eager"] or 0.0
        if best is None or speedup > best[1]:
            best = (cid, speedup)
    return best[0] if best else None


def best_json(task_id: str) -> str:
    ws = get_workspace()
    ws.task(task_id)
    best = best_candidate_id(task_id)
    if best is None:
        raise NotFound(f"task {task_id} has no accepted candidate yet")
    return candidate_json(best)


def candidate_json(candidate_id: str) -> str:
    ws = get_workspace()
    cand = ws.candidate(candidate_id)
    return json.dumps({**cand.model_dump(), "reports": ws.reports(candidate_id=candidate_id)}, indent=1)
