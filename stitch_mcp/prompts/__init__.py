"""The planner and verifier prompts: templates in this folder, filled from the workspace."""

from __future__ import annotations

from importlib.resources import files

from stitch_mcp.store import get_workspace

MAX_SOURCE = 16_000
MAX_DIFF = 1_500  # the verifier prompt shows what changed, not the candidate again
MAX_HISTORY_ROWS = 8


def _template(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def _clip(text: str, limit: int = MAX_SOURCE) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n# ... ({len(text) - limit} more characters)"


def _done(report: dict | None) -> dict | None:
    return report if report and report.get("status", "done") == "done" else None


def profile_digest(profile: dict | None, task, unit: str = "GPU ms") -> tuple[str, str]:
    """A short table of the reference's ops (or the static estimate) and where it came from."""
    from stitch_mcp.score.runtime import reference_shares
    from stitch_mcp.models import TaskRecord

    if profile:
        rows = [f"| op | share | {unit} | floor ms | kernels |", "|---|---|---|---|---|"]
        for op in (profile.get("ops") or [])[:10]:
            floor = op.get("floor_ms")
            rows.append(f"| {op.get('name')} | {float(op.get('share') or 0):.0%} | {float(op.get('gpu_ms') or 0):.3f} "
                        f"| {'' if floor is None else f'{floor:.3f}'} | {op.get('kernel_count', '')} |")
        head = []
        if profile.get("device"):
            head.append(f"device: {profile['device']}")
        if profile.get("gpu_ms_per_iter") is not None:
            head.append(f"{unit.split()[0]} time per iteration: {profile['gpu_ms_per_iter']:.3f} ms")
        if profile.get("launches_per_iter") is not None:
            head.append(f"launches per iteration: {profile['launches_per_iter']:.0f}")
        if profile.get("gpu_idle_fraction") is not None and unit.startswith("GPU"):
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
    from stitch_mcp.score.dimensions import WEIGHTS

    ws = get_workspace()
    task = ws.task(task_id)
    profile = _done(ws.latest_report("profile_reference", task_id=task_id))
    target = task_target(task_id, profile)
    digest, source = profile_digest(profile, task, PLANNER_WORDS[target]["unit"])
    current = (f"## The current plan (revise it: the Verifier routed to replan or you are starting over)\n"
               f"{task.plan}\n") if task.plan else ""
    return _template("planner").format(
        task_id=task_id, reference=_clip(task.source), profile=digest, profile_source=source,
        current_plan=current, w_anti=WEIGHTS["anti_hacking"], w_eng=WEIGHTS["cuda_engineering"],
        w_cov=WEIGHTS["operator_coverage"], w_skill=WEIGHTS["skill_compliance"], **PLANNER_WORDS[target])


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
        lines.append(f"fraction of the floor reached (time the hardware needs at best / measured time): {ff:.0%}")
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


def candidate_facts(cand, task) -> str:
    """One line on the candidate: its size, kernels and what it is written in."""
    from stitch_mcp import analysis as an

    a = an.analyze_candidate(cand.source, task.source)
    words = {"cuda": "CUDA C++", "dsl": "a GPU kernel language", "cpu": "C++ for the CPU", "": "Python/PyTorch only"}
    kernels = ", ".join(a.kernels[:6]) or "none found"
    return (f"It has {len(cand.source.splitlines())} lines, is written in {words[a.target]}, and defines the "
            f"kernels: {kernels}.")


def candidate_diff(cand) -> str:
    """The change from the parent (unified diff, clipped), or where to read a first candidate."""
    import difflib

    ws = get_workspace()
    if not cand.parent_id:
        return "(a first candidate: no parent to compare with)"
    try:
        parent = ws.candidate(cand.parent_id)
    except Exception:  # noqa: BLE001 - a parent from another workspace: nothing to compare
        return "(the parent is not in this workspace)"
    diff = "\n".join(difflib.unified_diff(parent.source.splitlines(), cand.source.splitlines(), cand.parent_id,
                                         cand.candidate_id, n=1, lineterm=""))
    if not diff:
        return "(unchanged from its parent)"
    return f"What changed from the parent `{cand.parent_id}`:\n```diff\n{_clip(diff, MAX_DIFF)}\n```"


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
    first = max(0, len(candidates) - MAX_HISTORY_ROWS)
    if first:
        rows.append(f"| ... | ({first} earlier candidates: stitch://tasks/{task_id}/history) | | | | | | | |")
    for i, c in list(enumerate(candidates, 1))[first:]:
        check = _done(ws.latest_report("check", candidate_id=c.candidate_id)) or {}
        rubric = ws.latest_report("rubric", candidate_id=c.candidate_id) or {}
        rows.append(f"| {i} | {c.candidate_id} | {c.parent_id or '-'} | {check.get('verdict') or '-'} | "
                    f"{check.get('speedup_vs_eager') or '-'} | {check.get('speedup_vs_compile') or '-'} | "
                    f"{rubric.get('verdict') or '-'} | {rubric.get('overall', '-')} | {routes.get(c.candidate_id, '-')} |")
    return "\n".join(rows)


def task_target(task_id: str, profile: dict | None) -> str:
    """'cpu' when the task's work runs on the CPU here (its profile says so, or the host has no GPU),
    else 'cuda'; the candidates' own code decides per candidate in the rubric."""
    device = str((profile or {}).get("device") or "").lower()
    if device:  # "CPU (x86_64)" from profile_reference, "cpu" from compile_and_check, else a GPU's name
        return "cpu" if device.startswith("cpu") else "cuda"
    ws = get_workspace()
    for cand in reversed(ws.candidates(task_id)):
        check = ws.latest_report("check", candidate_id=cand.candidate_id) or {}
        if check.get("device"):
            return "cpu" if str(check["device"]).lower().startswith("cpu") else "cuda"
    from stitch_mcp.devices import discover

    return "cuda" if discover() else "cpu"


PLANNER_WORDS = {
    "cuda": dict(
        language="custom CUDA", where="GPU time", unit="GPU ms",
        engineering="real techniques for this workload: vectorized access and grid-stride loops for elementwise "
                    "work; warp shuffles and shared memory for reductions; tiling, tensor cores and async copies, "
                    "or cuBLAS/cuBLASLt with epilogues, for GEMM/conv; fusion; CUDA graphs for launch-bound work",
        precision="On an fp32 task, tensor cores only with fp32 accuracy: 3xTF32 (split each operand into a TF32 "
                  "high part and residual) or cuBLAS/cuBLASLt with CUBLAS_COMPUTE_32F; plain TF32/BF16 is a "
                  "precision drop.",
        kernels="For each kernel: name, what it computes, grid/block mapping, the techniques it uses (or the "
                "library call).",
        bottleneck="Memory- or compute-bound, with the arithmetic (bytes moved, FLOPs, floor in ms on this GPU) and "
                   "the target."),
    "cpu": dict(
        language="custom C++ for the CPU (no GPU here: candidates are C++ extensions timed on the host)",
        where="CPU time", unit="CPU ms",
        engineering="real techniques for the CPU: SIMD vectorisation of the inner loop (unit-stride loops the "
                    "compiler vectorises, #pragma omp simd, at::vec or intrinsics), multithreading of the outer "
                    "loop (at::parallel_for), cache blocking for GEMM/conv, and loop fusion so each element is "
                    "read and written once",
        precision="Keep fp32 arithmetic where the reference is fp32 (no float16/bfloat16 shortcuts).",
        kernels="For each C++ function: name, what it computes, how its loops are split across threads and "
                "vectorised, and which loops are fused.",
        bottleneck="Memory- or compute-bound on this CPU, with the arithmetic (bytes moved, FLOPs, memory "
                   "bandwidth of the host) and the target in ms."),
}


def render_verifier(candidate_id: str, session: str | None = None) -> str:
    from stitch_mcp.loop import route_after
    from stitch_mcp.score.feedback import default_feedback
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
        plan=_clip(task.plan, 1500) if task.plan else "(no plan stored: use the planner prompt and save_plan)",
        candidate_facts=candidate_facts(cand, task), candidate_diff=candidate_diff(cand),
        check=_clip(check_digest(check), 1200),
        kernel_profile=_clip(kernel_digest(_done(ws.latest_report("profile_kernel", candidate_id=candidate_id))),
                             1200),
        rubric=_clip((rubric or {}).get("summary") or "(not scored yet: call rubric_score)", 1500),
        feedback="\n".join(f"- {f}" for f in feedback) or "(none: first candidate)",
        history=history_digest(cand.task_id, session), route=route_text)
