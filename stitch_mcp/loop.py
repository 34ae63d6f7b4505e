"""The Verifier loop: routing after each verification (fix, refine, replan, accept).

route_after(task_id, candidate_id, session=...) reads the candidate's stored reports (check,
profile_kernel, rubric) and its *lineage* in the session (its parent, the parent's parent, ...;
see store.py), decides, stores the decision and returns it. Rules, in order:

1. Not verified, or compile_and_check did not pass, or the rubric finds a certain hack: `fix`
   (the first thing to fix comes first) - unless its parent failed too (a finished check that
   did not pass, or a hack) since the lineage's last replan, then `replan`. A parent still being
   checked, or never checked, is not a failed attempt.
2. `accept` only when all hold: compile_and_check passed with every correctness trial correct; no
   integrity finding and no certain/probable anti-hacking finding; faster than PyTorch eager, and
   than torch.compile when the check timed it; profile_kernel was consulted at least once in the
   session on the task. Nothing is accepted without passing compile_and_check.
3. `replan` when the plan's target ops are not where the reference's time goes, or when this is
   the second stagnant attempt in a row along the lineage (correct, but no more than 2% faster
   than the best earlier correct ancestor since the last replan).
4. Otherwise `refine`, with the top feedback items.

Feedback items start with a tag, e.g. "[vectorized_access] ..." or "[coverage:relu] ...", that
rubric_score's skill-compliance check reads back on the candidate's children once the Verifier
stores them with save_feedback.
"""

from __future__ import annotations

import logging
import re

from stitch_mcp.models import CheckReport, KernelProfile, ReferenceProfile, Route, RubricReport
from stitch_mcp.store import Workspace, get_workspace, session_name

log = logging.getLogger(__name__)

STAGNANT_GAIN = 1.02


def _check_of(ws: Workspace, candidate_id: str) -> CheckReport | None:
    """The candidate's last finished compile_and_check; an unreadable one routes as unverified."""
    return ws.finished_report("check", CheckReport, candidate_id=candidate_id)


def _rubric_of(ws: Workspace, candidate_id: str) -> RubricReport | None:
    """The candidate's last stored rubric; an unreadable one is no verdict (not a hack)."""
    return ws.finished_report("rubric", RubricReport, candidate_id=candidate_id)


def _kernel_profile_of(ws: Workspace, candidate_id: str) -> KernelProfile | None:
    """The candidate's last finished profile_kernel; an unreadable one is as if never profiled."""
    return ws.finished_report("profile_kernel", KernelProfile, candidate_id=candidate_id)


def _reference_profile_of(ws: Workspace, task_id: str) -> ReferenceProfile | None:
    """The task's last finished profile_reference; without one the op shares are estimated statically."""
    return ws.finished_report("profile_reference", ReferenceProfile, task_id=task_id)


def _is_hack(rubric: RubricReport | None) -> bool:
    return rubric is not None and rubric.verdict == "hack"


def _failed(check: CheckReport | None, rubric: RubricReport | None) -> bool:
    if not check or check.verdict != "pass":
        return True
    return _is_hack(rubric)


def _needs_gpu(check: CheckReport | None) -> bool:
    return check is not None and check.error_kind == "needs_gpu"


def _speedup(check: CheckReport | None) -> float | None:
    if not check or check.verdict != "pass":
        return None
    return check.speedup_vs_eager


def profile_consulted(task_id: str, candidate_id: str | None = None, session: str | None = None) -> bool:
    """profile_kernel has run on the candidate or on a candidate of this session's on the task."""
    ws = get_workspace()
    ids = set(ws.lineage(task_id, session)) | ({candidate_id} if candidate_id else set())
    return any(_kernel_profile_of(ws, cid) is not None for cid in ids)


def _window(candidate_id: str, session: str | None = None) -> list[str]:
    """The candidate's lineage (oldest first, ending with it) since the last replan decided on an ancestor."""
    ws = get_workspace()
    line = ws.ancestors(candidate_id, session)
    cand = ws.candidate(candidate_id, session)
    replanned = {cid for cid, r in ws.routes(cand.task_id, session_name(session)) if r.decision == "replan"}
    start = 0
    for i, cid in enumerate(line[:-1]):
        if cid in replanned:
            start = i + 1
    return line[start:]


def _attempt_failed(candidate_id: str) -> bool:
    """A finished attempt that failed: its check did not pass, or the rubric called it a hack.
    Unchecked (or still running) is not a failure: a check run in parallel must not count."""
    ws = get_workspace()
    check = _check_of(ws, candidate_id)
    rubric = _rubric_of(ws, candidate_id)
    if check is None:
        return _is_hack(rubric)
    return _failed(check, rubric) and not _needs_gpu(check)


def _section(plan: str, heading: str) -> str:
    """The text under a heading (or after 'Heading:') up to the next markdown heading."""
    out: list[str] = []
    inside = False
    for line in plan.splitlines():
        if re.match(rf"\s*(#+\s*)?\**{heading}\**\s*:?", line, re.I):
            inside = True
            out.append(re.sub(rf"(?i).*?{heading}\**\s*:?", "", line, count=1))
            continue
        if inside and line.lstrip().startswith("#"):
            break
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def plan_mistarget(task_id: str, shares: list[tuple[str, float]]) -> str | None:
    """Why the stored plan aims at the wrong ops, or None."""
    from stitch_mcp import analysis as an

    ws = get_workspace()
    plan = ws.task(task_id).plan
    if not plan or not shares:
        return None
    text = _section(plan, r"target ops?") or plan
    text = text.lower()
    names: dict[str, set[str]] = {}
    for op, _ in shares:
        names[op] = {op} | {k for k, v in an.ALIASES.items() if v == op} | {
            k.lower() for k, v in an.NN_MODULES.items() if v == op}
    mentioned = {op for op, words in names.items() if any(re.search(rf"\b{re.escape(w)}\b", text) for w in words)}
    if not mentioned:
        return None
    top, top_share = shares[0]
    got = sum(s for op, s in shares if op in mentioned)
    if top not in mentioned and top_share >= 0.5 and got < 0.3:
        return (f"the plan targets {', '.join(sorted(mentioned))} ({got:.0%} of the reference's GPU time) but "
                f"`{top}` takes {top_share:.0%}")
    return None


def _first_fix(check: CheckReport | None, rubric: RubricReport | None) -> list[str]:
    items: list[str] = []
    if rubric is not None and rubric.verdict == "hack" and rubric.dimensions is not None:
        for f in rubric.dimensions.anti_hacking.findings:
            if f.confidence == "certain" and f.severity != "info":
                line = f" (line {f.evidence[0].line})" if f.evidence and f.evidence[0].line else ""
                tag = "no_fallback" if "fallback" in f.code or f.code in ("decoy_kernel", "reference_reuse") else f.code
                items.append(f"[{tag}] Remove this: {f.message}{line}. Compute it in your own kernel (cuBLAS/cuDNN "
                             "calls are fine).")
    if not check:
        items.append("[verify] Run compile_and_check on this candidate.")
        return items
    if not check.build.ok or check.verdict == "error":
        for d in check.build.diagnostics:
            if d.severity == "error":
                where = f"line {d.candidate_line or d.line}"
                items.append(f"[build] Fix the compile error at {where}: {d.message[:200]}")
                break
    correctness = check.correctness
    for t in correctness.trials:
        if not t.ok:
            # the check's own reason for this trial (worst element, tolerance, noise) and its diagnosis
            own = f"wrong output in trial {t.trial} "
            reason = next((r for r in check.reasons if r.startswith(own)),
                          f"trial {t.trial} ({t.inputs} inputs, {t.weights} "
                          f"weights) is wrong: {'; '.join(t.problems[:2]) or 'mismatch'}")
            advice = correctness.diagnosis or "compare the worst element's inputs with the reference"
            items.append(f"[correctness] {reason[:600]}. Likely cause: {advice}.")
            break
    for f in check.integrity.findings:
        if f.severity != "info":
            items.append(f"[{f.code}] {f.message}")
    if not items:
        items.extend(f"[check] {r}" for r in check.reasons[:2])
    return items


def refine_feedback(check: CheckReport | None, rubric: RubricReport | None, kprof: KernelProfile | None,
                    compute_heavy: bool = False) -> list[str]:
    """Ranked items for a correct candidate. compute_heavy: the reference's time is mostly GEMM/conv,
    so a floor from bytes alone (no FLOP count known) says nothing about this candidate."""
    from stitch_mcp.score.dimensions import ADVICE

    items: list[str] = []
    if rubric is not None and rubric.dimensions is not None:
        d = rubric.dimensions
        for f in d.anti_hacking.findings:
            if f.confidence == "probable" and f.severity != "info":
                line = f" (line {f.evidence[0].line})" if f.evidence and f.evidence[0].line else ""
                tag = "no_fallback" if "fallback" in f.code or f.code == "decoy_kernel" else f.code
                items.append(f"[{tag}] {f.message}{line}")
        for f in d.operator_coverage.findings:
            if f.code == "uncovered_op" and f.severity != "info":
                op = f.message.split("`")[1] if "`" in f.message else "op"
                items.append(f"[coverage:{op}] Implement {f.message.replace(' still runs as PyTorch', '')} in custom "
                             "code; it still runs as PyTorch.")
        for k in kprof.kernels if kprof else []:
            for s in k.suggestions[:2]:
                metric = f" ({s.metric}={s.value})" if s.metric else ""
                doc = f" [doc {s.doc_id}]" if s.doc_id else ""
                items.append(f"[profile] {k.name[:40]}: {s.text}{metric}{doc}")
        for f in d.cuda_engineering.findings:
            if f.code == "missing_technique":
                key = next((k for k in ADVICE if ADVICE[k] and ADVICE[k] in f.message), None)
                if key:
                    items.append(f"[{key}] {ADVICE[key][0].upper()}{ADVICE[key][1:]}.")
    if check:
        ff, bound = check.timing.floor_fraction, check.timing.floor_bound
        if ff is not None and ff < 0.7 and (bound or not compute_heavy):
            side = {"compute": "compute-bound: FLOPs at the dtype's peak", "memory": "memory-bound: bytes at the "
                    "copy bandwidth"}.get(bound or "", "bytes at the copy bandwidth")
            items.append(f"[speed] The candidate runs at {ff:.0%} of its roofline floor ({side}); the profile "
                         "says where the rest goes.")
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out[:6]


def route_after(task_id: str, candidate_id: str, rubric: RubricReport | None = None, store: bool = True,
                session: str | None = None, check: CheckReport | None = None) -> Route:
    """Decide, store (unless store=False) and return the next step for a candidate from its
    reports (`check` as compile_and_check just made it, else the stored one) and its lineage in
    the session."""
    from stitch_mcp import score

    ws = get_workspace()
    session = ws.home_session(candidate_id, session)
    cand = ws.candidate(candidate_id, session)
    task = ws.task(task_id)
    check = check if check is not None else _check_of(ws, candidate_id)
    kprof = _kernel_profile_of(ws, candidate_id)
    if rubric is None:
        try:
            rubric = score.assess(task, cand, session=session)
        except Exception:  # routing must not fail on an analysis bug
            log.exception("rubric assessment failed while routing %s", candidate_id)
            rubric = None
    window = _window(candidate_id, session)
    route = _decide(task_id, candidate_id, check, rubric, kprof, window, session)
    if store:
        ws.add_route(task_id, candidate_id, route, session)
    log.info("route %s -> %s (%s)", candidate_id, route.decision, "; ".join(route.reasons[:2]))
    return route


def _decide(task_id: str, candidate_id: str, check: CheckReport | None, rubric: RubricReport | None,
            kprof: KernelProfile | None, window: list[str], session: str | None = None) -> Route:
    ws = get_workspace()
    previous = window[:-1]
    prev_failed = bool(previous) and _attempt_failed(previous[-1])
    if _failed(check, rubric):
        return _route_failed(check, rubric, previous, prev_failed)

    # correct from here on
    trials = check.correctness.trials
    gates = _accept_gates(task_id, candidate_id, check, rubric, trials, session)
    s_eager, s_compile = check.speedup_vs_eager, check.speedup_vs_compile
    timing_note = (f"{s_eager:.2f}x vs eager" if s_eager is not None else "untimed") + (
        f", {s_compile:.2f}x vs torch.compile" if s_compile is not None else "")
    if not gates:
        return Route(decision="accept", reasons=[f"correct on {len(trials)} trials, no integrity or anti-hacking "
                                                 f"finding, {timing_note}, profiled"])
    shares, feedback = _shares_and_feedback(ws, task_id, check, rubric, kprof, gates)
    why = plan_mistarget(task_id, shares)
    if why:
        return Route(decision="replan", reasons=[why] + gates[:2], feedback=feedback)
    if _stagnant(ws, window):
        return Route(decision="replan", reasons=["two stagnant attempts in a row (no more than 2% faster than "
                                                 "the best earlier candidate)", timing_note] + gates[:1],
                     feedback=feedback)
    return Route(decision="refine", reasons=[f"correct; {timing_note}"] + gates[:3], feedback=feedback)


def _route_failed(check: CheckReport | None, rubric: RubricReport | None, previous: list[str], prev_failed: bool) -> Route:
    """Not verified, not passed, or a hack: fix it, or replan after a failed parent."""
    if not check:
        reasons = ["not verified yet: run compile_and_check"]
    elif check.verdict != "pass":
        reasons = [f"compile_and_check {check.verdict}"] + check.reasons[:2]
    else:
        reasons = ["rubric verdict hack: the candidate must do the work itself"]
    items = _first_fix(check, rubric)
    # "needs a GPU" is this machine's limit, not a failed attempt: it never forces a replan
    if prev_failed and check and not _needs_gpu(check):
        return Route(decision="replan", reasons=[f"two failed attempts in a row (this one and its parent "
                                                 f"{previous[-1]})"] + reasons, feedback=items)
    return Route(decision="fix", reasons=reasons, feedback=items)


def _accept_gates(task_id: str, candidate_id: str, check: CheckReport, rubric: RubricReport | None, trials: list,
                  session: str | None) -> list[str]:
    """What keeps a correct candidate from being accepted, if anything (see the module docstring, rule 2)."""
    gates: list[str] = []
    if not trials or not all(t.ok for t in trials):
        gates.append("not every correctness trial passed")
    integrity = [f for f in check.integrity.findings if f.severity != "info"]
    if integrity:
        gates.append(f"integrity finding: {integrity[0].code}")
    if rubric is not None and rubric.dimensions is not None:
        serious = [f for f in rubric.dimensions.anti_hacking.findings
                   if f.severity != "info" and f.confidence in ("certain", "probable")]
        if serious:
            gates.append(f"anti-hacking finding: {serious[0].code}")
    s_eager, s_compile = check.speedup_vs_eager, check.speedup_vs_compile
    compiled_asked = s_compile is not None or check.timing.compiled is not None
    if s_eager is None:
        gates.append("no timing against eager: run compile_and_check with timing")
    elif s_eager <= 1.0 and check.timing.harness_withheld:
        gates.append(f"no gain over eager shown on this CPU clock ({s_eager:.2f}x): any gain is within what the "
                     f"harness costs a call ({check.timing.harness_ms or 0:.3g} ms), which a room can skip; a GPU "
                     "times the kernel itself")
    elif s_eager <= 1.0 and check.timing.batch is not None and check.timing.batch.capped:
        gates.append(f"no gain over eager shown ({s_eager:.2f}x): its calls ({check.timing.batch.room_ms:.3g} ms by its "
                     "room) are too short for the judge's clock on this host to check (timing.batch.note says why): "
                     "on a GPU, time a larger problem; on a busy CPU host, check again when it is quieter")
    elif s_eager <= 1.0:
        gates.append(f"not faster than eager ({s_eager:.2f}x)")
    if compiled_asked and (s_compile is None or s_compile <= 1.0):
        gates.append(f"not faster than torch.compile ({s_compile:.2f}x)" if s_compile is not None
                     else "torch.compile timing missing")
    if not profile_consulted(task_id, candidate_id, session):
        gates.append("profile_kernel not consulted yet on this task")
    return gates


def _shares_and_feedback(ws: Workspace, task_id: str, check: CheckReport, rubric: RubricReport | None,
                         kprof: KernelProfile | None, gates: list[str]) -> tuple[list, list[str]]:
    """The reference's op shares (where its time goes) and the feedback for a correct candidate
    not accepted."""
    from stitch_mcp.score.runtime import reference_shares

    task = ws.task(task_id)
    ref_profile = _reference_profile_of(ws, task_id)
    shares, _ = reference_shares(task, ref_profile)
    from stitch_mcp import analysis as an

    compute_heavy = bool(shares) and an.op_class(shares[0][0]) == "gemm"
    feedback = refine_feedback(check, rubric, kprof, compute_heavy)
    if "profile_kernel not consulted yet on this task" in gates:
        feedback.insert(0, "[profile] Run profile_kernel on this candidate: acceptance needs one profile.")
    return shares, feedback


def _stagnant(ws: Workspace, window: list[str]) -> bool:
    """Stagnation: this and the previous correct attempt no faster than the best before them."""
    # a candidate the rubric calls a hack sets no bar: its speed is not the candidate's own work
    speeds = []
    for cid in window:
        c = _check_of(ws, cid)
        speeds.append((cid, None if _failed(c, _rubric_of(ws, cid)) else _speedup(c)))
    stagnant = []
    for i, (cid, s) in enumerate(speeds):
        best_before = max((x for _, x in speeds[:i] if x is not None), default=None)
        stagnant.append(s is not None and best_before is not None and s <= best_before * STAGNANT_GAIN)
    return len(stagnant) >= 2 and stagnant[-1] and stagnant[-2]


def save_plan(task_id: str, plan: str) -> str:
    """Store the Planner's plan with its task (replacing the previous one)."""
    ws = get_workspace()
    ws.set_plan(task_id, plan)
    ws.add_report("plan", {"status": "done", "plan": plan}, task_id=task_id)
    task = ws.task(task_id)
    ref_profile = _reference_profile_of(ws, task_id)
    from stitch_mcp.score.runtime import reference_shares

    shares, source = reference_shares(task, ref_profile)
    why = plan_mistarget(task_id, shares)
    note = f" Warning: {why} ({source})." if why else ""
    return f"plan stored for task {task_id} ({len(plan)} characters).{note}"


def save_feedback(candidate_id: str, items: list[str], session: str | None = None) -> str:
    """Store the Verifier's feedback on a candidate, in the session; rubric_score grades the
    candidate's children (in this session) against it."""
    items = [i.strip() for i in items if i and i.strip()]
    if not items:
        from stitch_mcp.errors import UserError

        raise UserError("items: give at least one non-empty feedback item")
    ws = get_workspace()
    cand = ws.candidate(candidate_id)
    ws.add_report("feedback", {"status": "done", "items": items}, task_id=cand.task_id, candidate_id=candidate_id,
                  session=session_name(session))
    return (f"{len(items)} feedback item(s) stored on {candidate_id}; its children (the next candidate of this "
            f"session on task {cand.task_id}, or one submitted with parent_candidate_id={candidate_id}) are graded "
            "against them (skill compliance).")
