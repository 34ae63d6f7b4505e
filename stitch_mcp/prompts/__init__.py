"""The planner and verifier prompts: templates in this folder, filled from the workspace."""

from __future__ import annotations

from importlib.resources import files

from stitch_mcp.store import get_workspace

MAX_SOURCE = 16_000


def _template(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def _clip(text: str, limit: int = MAX_SOURCE) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n# ... ({len(text) - limit} more characters)"


def _done(report: dict | None) -> dict | None:
    return report if report and report.get("status", "done") == "done" else None


def profile_digest(profile: dict | None, task) -> tuple[str, str]:
    """A short table of the reference's ops (or the static estimate) and where it came from."""
    from stitch_mcp.score import reference_shares
    from stitch_mcp.models import TaskRecord

    if profile:
        rows = ["| op | share | GPU ms | floor ms | kernels |", "|---|---|---|---|---|"]
        for op in (profile.get("ops") or [])[:10]:
            floor = op.get("floor_ms")
            rows.append(f"| {op.get('name')} | {float(op.get('share') or 0):.0%} | {float(op.get('gpu_ms') or 0):.3f} "
                        f"| {'' if floor is None else f'{floor:.3f}'} | {op.get('kernel_count', '')} |")
        head = []
        if profile.get("device"):
            head.append(f"device: {profile['device']}")
        if profile.get("gpu_ms_per_iter") is not None:
            head.append(f"GPU time per iteration: {profile['gpu_ms_per_iter']:.3f} ms")
        if profile.get("launches_per_iter") is not None:
            head.append(f"launches per iteration: {profile['launches_per_iter']:.0f}")
        if profile.get("gpu_idle_fraction") is not None:
            head.append(f"GPU idle: {profile['gpu_idle_fraction']:.0%}")
        notes = [f"- {f.get('message')}" for f in (profile.get("findings") or [])[:5]]
        text = "; ".join(head) + "\n\n" + "\n".join(rows) + ("\n\n" + "\n".join(notes) if notes else "")
        if profile.get("summary"):
            text += "\n\n" + profile["summary"]
        return text, "profile_reference"
    shares, _ = reference_shares(task if isinstance(task, TaskRecord) else task, None)
    rows = ["| op | estimated share |", "|---|---|"] + [f"| {op} | {s:.0%} |" for op, s in shares]
    return ("(no profile yet: call profile_reference for measured times; a static estimate follows, "
            "weighting GEMM/conv 10, reductions 3, elementwise 1)\n\n" + "\n".join(rows)), "static estimate"


def render_planner(task_id: str) -> str:
    from stitch_mcp.score import WEIGHTS

    ws = get_workspace()
    task = ws.task(task_id)
    profile = _done(ws.latest_report("profile_reference", task_id=task_id))
    digest, source = profile_digest(profile, task)
    current = (f"## The current plan (revise it: the Verifier routed to replan or you are starting over)\n"
               f"{task.plan}\n") if task.plan else ""
    return _template("planner").format(
        task_id=task_id, reference=_clip(task.source), profile=digest, profile_source=source,
        current_plan=current, w_anti=WEIGHTS["anti_hacking"], w_eng=WEIGHTS["cuda_engineering"],
        w_cov=WEIGHTS["operator_coverage"], w_skill=WEIGHTS["skill_compliance"])


def check_digest(check: dict | None) -> str:
    if not check:
        return "(not checked yet: call compile_and_check)"
    lines = [check.get("summary") or f"verdict {check.get('verdict')}"]
    lines.append(f"verdict: {check.get('verdict')}; speedup vs eager: {check.get('speedup_vs_eager')}; "
                 f"vs torch.compile: {check.get('speedup_vs_compile')}")
    trials = (check.get("correctness") or {}).get("trials") or []
    if trials:
        ok = sum(1 for t in trials if t.get("ok"))
        lines.append(f"correctness: {ok}/{len(trials)} trials correct")
    for f in ((check.get("integrity") or {}).get("findings") or [])[:5]:
        lines.append(f"- integrity [{f.get('confidence')}] {f.get('code')}: {f.get('message')}")
    ff = (check.get("timing") or {}).get("floor_fraction")
    if ff is not None:
        lines.append(f"fraction of the memory floor reached: {ff:.0%}")
    return "\n".join(dict.fromkeys(lines))


def kernel_digest(kprof: dict | None) -> str:
    if not kprof:
        return "(not profiled yet: call profile_kernel; acceptance needs one profile on the task)"
    lines = [kprof.get("summary") or ""]
    for k in (kprof.get("kernels") or [])[:4]:
        stalls = ", ".join(f"{s.get('reason')} {float(s.get('share') or 0):.0%}" for s in (k.get("stalls") or [])[:3])
        lines.append(f"- {k.get('name', '')[:80]}: {k.get('duration_us')} us x{k.get('launches')}, "
                     f"{k.get('bound') or 'bound ?'} ({k.get('bound_evidence', '')}), memory {k.get('memory_pct')}%, "
                     f"compute {k.get('compute_pct')}%, occupancy {k.get('achieved_occupancy_pct')}%"
                     + (f", stalls: {stalls}" if stalls else ""))
        for s in (k.get("suggestions") or [])[:3]:
            lines.append(f"  - suggestion {s.get('rank')}: {s.get('text')}"
                         + (f" [doc {s.get('doc_id')}]" if s.get("doc_id") else ""))
    if kprof.get("other_kernels"):
        lines.append(f"other (library/PyTorch) kernels: {', '.join(kprof['other_kernels'][:5])}")
    return "\n".join(x for x in lines if x)


def history_digest(task_id: str, session: str | None = None) -> str:
    """The session's candidates on the task (every candidate when the session has none)."""
    from stitch_mcp.store import session_name

    ws = get_workspace()
    routes: dict[str, str] = {}
    for cid, r in ws.routes(task_id, session_name(session)):
        routes[cid] = r.decision
    mine = ws.lineage(task_id, session)
    candidates = [ws.candidate(cid, session) for cid in mine] if mine else ws.candidates(task_id)
    rows = ["| # | candidate | parent | check | x eager | x compile | rubric | overall | route |",
            "|---|---|---|---|---|---|---|---|---|"]
    for i, c in enumerate(candidates, 1):
        check = _done(ws.latest_report("check", candidate_id=c.candidate_id)) or {}
        rubric = ws.latest_report("rubric", candidate_id=c.candidate_id) or {}
        rows.append(f"| {i} | {c.candidate_id} | {c.parent_id or '-'} | {check.get('verdict') or '-'} | "
                    f"{check.get('speedup_vs_eager') or '-'} | {check.get('speedup_vs_compile') or '-'} | "
                    f"{rubric.get('verdict') or '-'} | {rubric.get('overall', '-')} | {routes.get(c.candidate_id, '-')} |")
    return "\n".join(rows)


def render_verifier(candidate_id: str, session: str | None = None) -> str:
    from stitch_mcp.loop import route_after
    from stitch_mcp.score import default_feedback
    from stitch_mcp.store import session_name

    ws = get_workspace()
    cand = ws.candidate(candidate_id, session)
    task = ws.task(cand.task_id)
    check = _done(ws.latest_report("check", candidate_id=candidate_id))
    rubric = ws.latest_report("rubric", candidate_id=candidate_id)
    routes = [r for cid, r in ws.routes(cand.task_id, session_name(session)) if cid == candidate_id]
    route = routes[-1] if routes else route_after(cand.task_id, candidate_id, store=False, session=session)
    route_text = f"**{route.decision}** - " + "; ".join(route.reasons) + "".join(
        f"\n{i}. {item}" for i, item in enumerate(route.feedback, 1))
    feedback = default_feedback(cand, session)
    return _template("verifier").format(
        candidate_id=candidate_id, task_id=cand.task_id, parent_id=cand.parent_id or "none",
        plan=task.plan or "(no plan stored: use the planner prompt and save_plan)",
        candidate=_clip(cand.source), check=check_digest(check),
        kernel_profile=kernel_digest(_done(ws.latest_report("profile_kernel", candidate_id=candidate_id))),
        rubric=(rubric or {}).get("summary") or "(not scored yet: call rubric_score)",
        feedback="\n".join(f"- {f}" for f in feedback) or "(none: first candidate)",
        history=history_digest(cand.task_id, session), route=route_text)
