"""The planner and verifier prompts: templates in this folder, filled from the workspace."""

from __future__ import annotations

import json
from importlib.resources import files

from stitch_mcp.store import get_workspace


def _template(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def render_planner(task_id: str) -> str:
    ws = get_workspace()
    task = ws.task(task_id)
    profile = ws.latest_report("profile_reference", task_id=task_id)
    digest = profile.get("summary") if profile else "(no profile yet: call profile_reference first)"
    return _template("planner").format(task_id=task_id, reference=task.source, profile=digest)


def render_verifier(candidate_id: str) -> str:
    ws = get_workspace()
    cand = ws.candidate(candidate_id)
    check = ws.latest_report("check", candidate_id=candidate_id)
    return _template("verifier").format(
        candidate_id=candidate_id, task_id=cand.task_id, candidate=cand.source,
        check=(check or {}).get("summary", "(not checked yet: call compile_and_check)"),
        kernel_profile=(ws.latest_report("profile_kernel", candidate_id=candidate_id) or {}).get(
            "summary", "(not profiled yet: call profile_kernel)"),
        rubric=(ws.latest_report("rubric", candidate_id=candidate_id) or {}).get(
            "summary", "(not scored yet: call rubric_score)"),
        history=json.dumps([{"candidate_id": c, "decision": r.decision} for c, r in ws.routes(cand.task_id)]))
