"""The Verifier loop: routing after each verification (fix, refine, replan, accept).

This first version routes on the compile_and_check verdict alone; the rubric issue refines it.
"""

from __future__ import annotations

from stitch_mcp.models import Route
from stitch_mcp.store import get_workspace


def route_after(task_id: str, candidate_id: str) -> Route:
    """Decide and store the next step for a candidate from its stored reports."""
    ws = get_workspace()
    check = ws.latest_report("check", candidate_id=candidate_id) or {}
    if check.get("verdict") != "pass":
        route = Route(decision="fix", reasons=list(check.get("reasons") or ["not verified yet"])[:3])
    else:
        route = Route(decision="refine", reasons=["correct; see timing and profile_kernel for what to improve"])
    ws.add_route(task_id, candidate_id, route)
    return route
