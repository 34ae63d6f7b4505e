"""compile_and_check: build, correctness, integrity and timing of a candidate (issue 3).

This module runs in the server process and imports nothing heavy: every step that touches the
candidate runs in a worker process (stitch_mcp.worker): the build stage (stitch_mcp.build, limit
settings.build_timeout_s) and the run stage (stitch_mcp.correctness with stitch_mcp.integrity and
stitch_mcp.timing, limit settings.run_timeout_s). A candidate whose extensions are all in the
build cache skips the build worker. While a task's first candidate builds, a third worker times the
reference on the GPU (the baselines, cached per task and device). Every call is stored in the
workspace with its routing decision.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import (
    BatchTiming,
    BuildReport,
    CheckReport,
    CorrectnessReport,
    Diagnostic,
    ExtensionBuild,
    Finding,
    IntegrityReport,
    TimingReport,
    TimingStats,
    ToleranceValues,
    TrialResult,
)
from stitch_mcp.stage_results import (
    BaselineStageResult,
    BuildStageResult,
    MeasuredTimes,
    RunStageResult,
    RunTiming,
    StageFailure,
    StageResult,
    valid_records,
)

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 4000


# ------------------------------------------------------------------ planning


def trial_plan(trials: int) -> list[tuple[int, str, str]]:
    """(seed, input distribution, weights) per trial, every seed drawn for this check. A seed fixed
    across checks made the same inputs every time: a room that rebuilt the heavy-tailed trial's inputs
    at import (the judge's own `distribute`, from the seed a failed check's feedback names) passed
    while wrong on every other heavy-tailed draw (red team, 2026-11-27). A drawn seed can be named in
    feedback: it says how to make the failing inputs again and nothing about the next check's."""
    base = [("task", "task"), ("task", "task"), ("normal", "task"), ("heavy_tailed", "task"), ("task", "reinit")]
    extra = [("task", "task"), ("normal", "task"), ("heavy_tailed", "task")]
    plan = []
    for i in range(trials):
        dist, weights = base[i] if i < len(base) else extra[(i - len(base)) % len(extra)]
        plan.append([secrets.randbelow(2 ** 31 - 1), dist, weights])
    if trials > 5:  # re-initialised weights stay in the model: make them the last trial
        plan[4][2], plan[-1][2] = "task", "reinit"
    return [tuple(p) for p in plan]  # type: ignore[misc]


def run_spec(reference_source: str, candidate_source: str, build_root: Path, settings, *, trials: int,
             timing: bool, compare_compile: bool, atol: float | None = None, rtol: float | None = None,
             baselines: dict[str, Any] | None = None, limits: dict[str, Any] | None = None,
             timing_seeds: list[int] | None = None, tolerance: str | None = None) -> dict[str, Any]:
    """What the run stage's judge is given (judge.run_stage reads it). The seeds stay with the
    judge: the candidate's room gets inputs, never the seeds they were drawn from."""
    from stitch_mcp.compare import tolerance_table

    tol = tolerance_table(tolerance or settings.tolerance, {k: getattr(settings, k) for k in
                                                            ("atol", "rtol", "atol_half", "rtol_half")})
    return {"reference_source": reference_source, "candidate_source": candidate_source,
            "build_root": str(candidate_scope(build_root, candidate_source)),
            "room_parent": str(_work_parent(settings)), "room_timeout_s": settings.run_timeout_s,
            "gpu": _cuda_possible(),
            "plan": [list(p) for p in trial_plan(trials)], "timing": timing,
            "compare_compile": compare_compile, "atol": atol, "rtol": rtol,
            "tol": tol,
            "timing_iters": settings.timing_iters,
            "timing_seeds": timing_seeds or [secrets.randbelow(2 ** 31 - 1) for _ in range(2)],
            "baselines": None, "baselines_by_device": baselines or {}, "limits": limits or {}}


def candidate_scope(build_root: Path, candidate_source: str) -> Path:
    """The build cache folder of one candidate source. Building runs the candidate's own Python
    (and compiler flags), so what a build leaves is trusted only for the same source: a candidate
    cannot plant an object file or a header that another candidate would pick up."""
    import hashlib

    return Path(build_root) / "scopes" / hashlib.sha256(candidate_source.encode()).hexdigest()[:32]


def _limits(timeout_s: float, cuda_possible: bool) -> dict[str, Any]:
    limits: dict[str, Any] = {"nofile": 4096, "nproc": 8192, "cpu_s": int(timeout_s * (os.cpu_count() or 1) + 60),
                              "fsize": 8 * 1024 ** 3, "deny_network": True}
    if not cuda_possible:  # the CUDA driver reserves huge virtual ranges: no address-space limit with it
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            limits["as_bytes"] = int(total * 0.8)
        except (ValueError, OSError):
            pass
    return limits


def _cuda_possible() -> bool:
    from stitch_mcp.cuda_tools import nvidia_devices

    return bool(nvidia_devices())


def _static_problems(source: str) -> tuple[str, str, int | None] | None:
    """Problems visible without running anything: (error_kind, message, line)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return "syntax_error", f"SyntaxError: {exc.msg} (line {exc.lineno})", exc.lineno
    defined = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Expr)):
            defined.add("*")  # dynamic code (if/try/for at top level): let the worker decide
    if "ModelNew" not in defined and "*" not in defined:
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        extra = f" (it defines {', '.join(classes[:5])})" if classes else ""
        return "interface", f"the candidate defines no class ModelNew{extra}; name the model class ModelNew", None
    return None


# ------------------------------------------------------------------ the tool


def compile_and_check(*, candidate: str, reference: str | None = None, task_id: str | None = None,
                      trials: int | None = None, atol: float | None = None, rtol: float | None = None,
                      timing: bool = True, compare_compile: bool | None = None,
                      parent_candidate_id: str | None = None, session: str | None = None,
                      progress: Progress | None = None, tolerance: str | None = None) -> CheckReport:
    from stitch_mcp.sources import resolve_candidate, resolve_task
    from stitch_mcp.store import get_workspace

    t_start = time.monotonic()
    settings = get_settings()
    task = resolve_task(reference, task_id)
    cand = resolve_candidate(candidate, None, task, parent_id=parent_candidate_id, session=session)
    ws = get_workspace()
    trials = trials or settings.trials
    tolerance = _tolerance_preset(tolerance or settings.tolerance)
    compare_compile = settings.compare_compile if compare_compile is None else compare_compile
    report = CheckReport(task_id=task.task_id, candidate_id=cand.candidate_id)
    report.correctness.atol, report.correctness.rtol = atol, rtol
    report.correctness.tolerance = tolerance + "".join(f"+{k}" for k, v in (("atol", atol), ("rtol", rtol)) if v)
    progress = progress or Progress()
    progress.update(0, 3, "checking the candidate")
    Path(settings.build_dir).expanduser().mkdir(parents=True, exist_ok=True)
    if settings.executor == "ray":
        return _check_on_ray(report, task, cand, ws, t_start, progress, session, trials=trials, atol=atol,
                             rtol=rtol, timing=timing, compare_compile=compare_compile, tolerance=tolerance)
    workroot = Path(tempfile.mkdtemp(prefix=f"check-{cand.candidate_id}-", dir=_work_parent(settings)))
    presence = _task_activity.enter(task.task_id)  # until nothing of this check's candidate runs

    try:
        static = _static_problems(cand.source)
        if static:
            kind, message, line = static
            report.verdict, report.error_kind = "error", kind
            report.reasons = [message + (f" (candidate line {line})" if line else "")]
            if kind == "syntax_error":
                report.build.diagnostics = [Diagnostic(message=message, file="candidate.py", line=line,
                                                       candidate_line=line,
                                                       source_line=_line(cand.source, line))]
            return _finish(report, ws, t_start, session)

        baselines = _start_baselines(task, ws, settings, presence, timing=timing, compare_compile=compare_compile)
        needs_gpu = _build_step(report, task, cand, settings, progress)
        if report.verdict == "error":
            return _finish(report, ws, t_start, session)
        if needs_gpu:
            report.verdict, report.error_kind = "error", "needs_gpu"
            report.reasons = [f"needs a GPU to run: {needs_gpu}. Run the check on a machine "
                              "with a CUDA device (correctness and timing were not measured)"]
            return _finish(report, ws, t_start, session)
        _run_step(report, task, cand, ws, settings, progress, workroot, baselines, presence, trials=trials,
                  timing=timing, compare_compile=compare_compile, atol=atol, rtol=rtol, tolerance=tolerance)
        progress.update(3, 3, "done")
        return _finish(report, ws, t_start, session)
    finally:
        presence.leave_after([])  # where the run stage has not already
        shutil.rmtree(workroot, ignore_errors=True)


def _build_step(report: CheckReport, task, cand, settings, progress: Progress) -> str:
    """The build (in a sandboxed room) unless the candidate source's cache scope has it: returns
    why it needs a GPU, or "". A failed build leaves report.verdict "error"."""
    from stitch_mcp.build.cache import cached_manifest
    from stitch_mcp.build_room import build_in_room

    scope = candidate_scope(Path(settings.build_dir).expanduser(), cand.source)
    manifest = cached_manifest(scope, cand.source)
    if manifest is None and not any(w in cand.source for w in ("cpp_extension", "load_inline", "load(")):
        manifest = {"extensions": []}  # nothing to build: straight to the run stage
    if manifest is not None:
        report.build = BuildReport(ok=True, cached=True, extensions=[
            _extension({**e, "cached": True, "seconds": 0.0}) for e in manifest.get("extensions", [])],
            diagnostics=valid_records(Diagnostic, manifest.get("diagnostics", [])))
        report.stage_seconds["build"] = 0.0
        progress.update(1, 3, "build cached")
        return manifest.get("needs_gpu") or ""
    progress.update(0, 3, "building (in the candidate's sandbox)")
    res = build_in_room(cand.source, scope, settings, gpu=_cuda_possible(), register_kill=progress.on_cancel,
                        progress=progress, reference_source=task.source)
    progress.check()
    report.stage_seconds["build"] = round(res.seconds, 3)
    built = _fill_build(report, res)
    if not res.ok or built.error:
        _error_from(report, res, stage="build", source=cand.source)
        report.output = _trim(res.output)
        return ""
    progress.update(1, 3, "built")
    return built.needs_gpu or ""


def _run_step(report: CheckReport, task, cand, ws, settings, progress: Progress, workroot: Path,
              baselines: threading.Thread | None, presence: _Presence, *, trials: int, timing: bool,
              compare_compile: bool, atol: float | None, rtol: float | None, tolerance: str) -> None:
    """The run stage: the judge (a trusted worker) with the candidate's rooms, on a GPU chosen now
    and leased by the judge for its trials and timing. torch.compile's baseline: the judge's own
    where the check is alone on its task (`compile_in_judge`, kept only if it stayed alone), else
    the baseline worker's (`baselines`)."""
    from stitch_mcp.ceilings import reference_flops
    from stitch_mcp.devices import choose_device, pin_env
    from stitch_mcp.gpu_memory import out_of_memory_beside_others
    from stitch_mcp.worker import card_to_itself, run_worker

    if baselines is None:  # alone when the check started: a check of the task may have started since
        baselines = _start_baselines(task, ws, settings, presence, timing=timing, compare_compile=compare_compile)
    pending = baselines is not None and baselines.is_alive()  # before the cache is read: it may store meanwhile
    quiet_mark = _task_activity.quiet_mark(presence)
    spec = run_spec(task.source, cand.source, Path(settings.build_dir).expanduser(), settings, trials=trials,
                    timing=timing, compare_compile=compare_compile, atol=atol, rtol=rtol,
                    baselines=_cached_baselines(ws, task.task_id, settings.timing_iters),
                    limits=_limits(settings.run_timeout_s, _cuda_possible()), tolerance=tolerance)
    spec["compile_baseline_pending"] = pending
    spec["compile_in_judge"] = _compile_in_judge(spec, timing and compare_compile and not pending
                                                 and quiet_mark is not None)
    # the roofline floor counts the reference's FLOPs where profile_reference measured them
    spec["flops"], spec["flops_dtype"] = reference_flops(ws.latest_report("profile_reference", task_id=task.task_id))
    progress.update(1, 3, "running correctness, integrity and timing")

    def on_event(ev: dict) -> None:
        if ev.get("event") == "stage":
            extra = f" trial {ev['trial']}" if "trial" in ev else (f" {ev['what']}" if "what" in ev else "")
            progress.update(1, 3, f"{ev.get('name')}{extra}")

    gpu = choose_device()
    spec["lease_gpu"] = dataclasses.asdict(gpu) if gpu else None
    res = run_worker("run", spec, workdir=workroot / "run", timeout_s=settings.run_timeout_s,
                     on_event=on_event, register_kill=progress.on_cancel, env=pin_env(gpu), until_result=True)
    exits = [res.exited]
    if spec["compile_in_judge"] and _compile_crashed(res):
        log.warning("torch.compile crashed compiling the reference of task %s: judging without it", task.task_id)
        report.notes.append(f"torch.compile's baseline: compiling the reference crashed its judge "
                            f"({res.kind or _run_result(res).error.kind}); judged again without it, not timed")
        spec.update(compile_in_judge=False, compare_compile=False)
        res = run_worker("run", spec, workdir=workroot / "run-without-compile", timeout_s=settings.run_timeout_s,
                         on_event=on_event, register_kill=progress.on_cancel, env=pin_env(gpu), until_result=True)
        exits.append(res.exited)
    if out_of_memory_beside_others(_run_result(res), f"{res.kind} {res.message}"):
        progress.update(1, 3, "out of GPU memory beside other checks: judged again with the card to itself")
        report.stage_seconds["run_beside_others"] = round(res.seconds, 3)
        spec["whole_card"] = True
        with card_to_itself():
            res = run_worker("run", spec, workdir=workroot / "run-whole-card", timeout_s=settings.run_timeout_s,
                             on_event=on_event, register_kill=progress.on_cancel, env=pin_env(gpu),
                             until_result=True, spare=False)
        exits.append(res.exited)
    presence.leave_after(exits)  # the rooms end with their judges
    progress.check()
    out = _read_run(report, res, spec)
    if not res.ok or out.error:
        _error_from(report, res, stage="run", source=cand.source)
        return
    if _cuda_possible() and not _task_activity.quiet_since(presence, quiet_mark) \
            and _drop_judges_baselines(report, out):  # another check of the task ran beside its timing
        baselines = _start_baselines(task, ws, settings, presence, timing=timing, compare_compile=compare_compile,
                                     alone_ok=False)
    _store_baselines(ws, task.task_id, out, settings.timing_iters)
    if (spec["compile_baseline_pending"] or spec["compile_in_judge"]) and baselines is not None \
            and report.timing is not None and report.timing.compiled is None:
        _compile_baseline(report, baselines, presence, ws, settings, progress)
    _verdict(report)


def _compile_crashed(res) -> bool:
    """Whether the run stage ended while its judge compiled torch.compile's baseline (a compiler crash,
    or a CUDA context it broke): nothing of the candidate had run yet. Not where the caller cancelled
    the check then: judging it again without the baseline would start a worker only to kill it."""
    from stitch_mcp.events import COMPILING_BASELINE

    if res.status == "cancelled":
        return False
    error = _run_result(res).error
    return (not res.ok and res.stage == COMPILING_BASELINE) or (error is not None
                                                                 and error.kind == "compile_baseline_crashed")


def _compile_in_judge(spec: dict[str, Any], wanted: bool) -> bool:
    """Whether the judge compiles torch.compile's baseline before its check's memory share and times
    it after the candidate's rooms end (judge.prepare._compile_ahead): on a GPU, where no baseline
    worker times it for the task (`wanted`) and the task's cache does not settle it yet."""
    from stitch_mcp.correctness import compile_baseline_known

    return wanted and _cuda_possible() and not any(map(compile_baseline_known,
                                                       (spec.get("baselines_by_device") or {}).values()))


def _drop_judges_baselines(report: CheckReport, out: RunStageResult) -> bool:
    """Neither cache nor use the baselines a judge timed while another check of its task ran (that
    check's candidate could have slowed them down): torch.compile's comes from the baseline worker
    instead. Whether there were any."""
    if not isinstance(out.timing, RunTiming) or out.timing.clean_baselines is None:
        return False
    out.timing.clean_baselines = None
    if report.timing is not None:
        report.timing.compiled, report.timing.baselines_cached = None, False
        report.timing.compile_note = "torch.compile's baseline is timed by a worker of its own: another check " \
                                     "of the task ran while this one's judge timed it"
    report.speedup_vs_compile = None
    return True


def _compile_baseline(report: CheckReport, baselines: threading.Thread, presence: _Presence, ws, settings,
                      progress: Progress) -> None:
    """torch.compile's time from the task's baseline worker, which times it once this check's
    candidate has ended: waited for unless another check of the task keeps it waiting too."""
    progress.update(2, 3, "waiting for torch.compile's baseline")
    t0 = time.monotonic()
    while baselines.is_alive() and time.monotonic() - t0 < settings.run_timeout_s \
            and not _task_activity.others_running(presence):
        baselines.join(timeout=0.1)
        progress.check()
    report.stage_seconds["compile_baseline_wait"] = round(time.monotonic() - t0, 3)
    base = _cached_baselines(ws, presence.task_id, settings.timing_iters).get(report.device or "")
    tr = report.timing
    if not base or not base.get("compiled"):
        tr.compile_note = (base or {}).get("compile_note") or (
            "torch.compile's baseline is timed once no check of the task is running (a later check shows "
            "it)" if baselines.is_alive() else
            "torch.compile's baseline was not timed (its worker failed: see the server's log)")
        return
    tr.compiled = _as(TimingStats, MeasuredTimes.model_validate(base["compiled"]))
    tr.compile_note, tr.baselines_cached = base.get("compile_note", ""), True
    if tr.candidate and tr.candidate.median_ms > 0:
        report.speedup_vs_compile = round(tr.compiled.median_ms / tr.candidate.median_ms, 4)


def _run_result(res) -> RunStageResult:
    """What the judge sent back (validated on receipt: worker.run_worker); empty when it sent
    nothing (it crashed, timed out, was killed)."""
    return res.result if isinstance(res.result, RunStageResult) else RunStageResult()


def _read_run(report: CheckReport, res, spec: dict[str, Any]) -> RunStageResult:
    """What the judge sent back, into the report (the verdict aside)."""
    out = _run_result(res)
    report.output = _trim(out.room.output if out.room is not None else res.output)  # what the candidate printed
    report.stage_seconds["run"] = round(res.seconds, 3)
    report.stage_seconds.update(out.stage_seconds)
    report.device = out.device
    _fill_run(report, out, spec)
    if out.lease is not None:
        report.timing.lease, report.timing.lease_wait_s = out.lease.label, out.lease.waited_s
        report.timing.window = out.lease.window
        if out.lease.note:
            report.notes.append(out.lease.note)
    return out


def _tolerance_preset(name: str) -> str:
    from stitch_mcp.compare import PRESETS

    if name not in PRESETS:
        raise UserError(f"tolerance: unknown preset {name!r}; use one of {', '.join(PRESETS)} "
                        "(or give atol/rtol)")
    return name


def _work_parent(settings) -> str:
    p = Path(settings.cache_dir).expanduser() / "work"
    p.mkdir(parents=True, exist_ok=True)
    return str(p)


def _line(source: str, line: int | None) -> str:
    if not line:
        return ""
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _trim(text: str) -> str:
    return text if len(text) <= OUTPUT_LIMIT else text[:1000] + "\n...\n" + text[-(OUTPUT_LIMIT - 1000):]


# ------------------------------------------------------------------ filling the report


def _extension(record: dict) -> ExtensionBuild:
    """A worker's record of one extension (build.BuildCache) as the report's model."""
    return ExtensionBuild(**{k: v for k, v in record.items() if k in ExtensionBuild.model_fields})


def _fill_build(report: CheckReport, res) -> BuildStageResult:
    """The build's outcome into the report; returns what it reported (empty when the room died)."""
    out = res.result if isinstance(res.result, BuildStageResult) else BuildStageResult()
    exts = [_as(ExtensionBuild, e) for e in out.extensions]
    report.build = BuildReport(ok=res.ok and not out.error, seconds=round(res.seconds, 3),
                               cached=bool(exts) and all(e.cached for e in exts), extensions=exts,
                               diagnostics=[_as(Diagnostic, d) for d in out.diagnostics], log_tail=out.log_tail)
    return out


def _as(model, record):
    """A record of a stage's result as the report's own model (the report shows fewer fields)."""
    return model.model_validate(record.model_dump(include=set(model.model_fields)))


def _fill_run(report: CheckReport, out: RunStageResult, spec: dict | None = None) -> None:
    from stitch_mcp.compare import tolerance_by_dtype, tolerance_label

    if out.extensions and not report.build.extensions:
        report.build.extensions = [_as(ExtensionBuild, e) for e in out.extensions]
    trials = [_as(TrialResult, t) for t in out.trials]
    report.correctness = CorrectnessReport(ok=bool(trials) and all(t.ok for t in trials), trials=trials,
                                           atol=out.atol if out.atol is not None else report.correctness.atol,
                                           rtol=out.rtol if out.rtol is not None else report.correctness.rtol,
                                           output_dtype=out.output_dtype,
                                           tolerance=tolerance_label(spec) if spec else report.correctness.tolerance,
                                           tolerance_by_dtype={k: ToleranceValues(atol=a, rtol=r) for k, (a, r) in
                                                               tolerance_by_dtype(spec).items()} if spec else {})
    report.correctness.diagnosis = _diagnosis(trials)
    findings = [_as(Finding, f) for f in out.findings]
    report.integrity = IntegrityReport(ok=not any(f.severity == "error" for f in findings),
                                       checks_run=list(dict.fromkeys(out.checks_run)), findings=findings)
    if out.timing is not None:
        _fill_timing(report, out.timing, out.device)
    report.notes += out.notes
    if out.room is not None and out.room.isolation:
        report.isolation = f"{out.room.isolation}: {', '.join(out.room.mechanisms)}"
        report.notes += [f"isolation: {w}" for w in out.room.warnings]


def _fill_timing(report: CheckReport, t: RunTiming, device: str) -> None:
    """The judge's timing into the report, with the speedups and the share of the roofline floor."""
    def stats(measured: MeasuredTimes | None) -> TimingStats | None:
        return _as(TimingStats, measured) if measured is not None else None

    tr = TimingReport(method=t.method, device=device, candidate=stats(t.candidate), eager=stats(t.eager),
                      eager_note=t.eager_note, candidate_alone=stats(t.candidate_alone), compiled=stats(t.compiled),
                      compile_note=t.compile_note, floor_ms=t.floor_ms,
                      floor_bound=t.floor_bound, floor_note=t.floor_note, eager_block_spread=t.eager_block_spread,
                      candidate_block_spread=t.candidate_block_spread, floor_bytes=t.floor_bytes,
                      baselines_cached=t.baselines_cached, batch=_as(BatchTiming, t.batch) if t.batch else None,
                      harness_ms=t.harness_ms, harness_withheld=t.harness_withheld, harness_note=t.harness_note,
                      interrupts_per_ms=t.interrupts_per_ms, no_speedup=t.no_speedup)
    if tr.floor_ms and tr.candidate and tr.candidate.median_ms > 0:
        tr.floor_fraction = round(tr.floor_ms / tr.candidate.median_ms, 4)
    report.timing = tr
    if tr.candidate and tr.candidate.median_ms > 0:
        if tr.eager:
            report.speedup_vs_eager = round(tr.eager.median_ms / tr.candidate.median_ms, 4)
        if tr.compiled:
            report.speedup_vs_compile = round(tr.compiled.median_ms / tr.candidate.median_ms, 4)


def _error_from(report: CheckReport, res, *, stage: str, source: str) -> None:
    """Why a stage ended in error: the error it reported, else how its process ended."""
    err = (res.result.error if isinstance(res.result, StageResult) else None) or StageFailure(kind="")
    kind = err.kind or res.kind or "error"
    message = err.message or res.message
    report.verdict, report.error_kind = "error", kind
    if kind == "compile_error":
        first = next((d for d in report.build.diagnostics if d.severity == "error"), None)
        if first is None and err.diagnostics:
            report.build.diagnostics = [_as(Diagnostic, d) for d in err.diagnostics]
            first = next((d for d in report.build.diagnostics if d.severity == "error"), None)
        if err.log and not report.build.log_tail:
            report.build.log_tail = err.log[-4000:]
        report.build.ok = False
        if first is not None:
            where = f"candidate line {first.candidate_line}" if first.candidate_line else \
                f"{first.file}:{first.line}" if first.file else "link"
            src = f" `{first.source_line}`" if first.source_line else ""
            report.reasons = [f"compile error at {where}{src}: {first.message}"]
        else:
            report.reasons = [f"build failed: {message[:500]}; see build.log_tail"]
        report.reasons += [f"{d.severity} at candidate line {d.candidate_line}: {d.message}"
                           for d in report.build.diagnostics[1:4] if d.candidate_line and d.severity == "error"]
        return
    line, why = err.line, err.why
    where = f" (candidate line {line}: `{_line(source, line)}`)" if line else ""
    prefix = {"import_error": "importing the candidate failed", "syntax_error": "syntax error",
              "interface": "interface mismatch", "init_error": "ModelNew's constructor failed",
              "runtime_error": "the candidate's forward raised", "reference_error": "the reference failed",
              "timeout": "timeout", "output_flood": "output flood", "os_exit": "the worker exited",
              }.get(kind, kind.replace("_", " "))
    from stitch_mcp.analysis import missing_package_message

    if kind == "import_error" and (hint := missing_package_message(message)):
        report.reasons = [hint + where]  # the verifier's setup, not the candidate's bug
        return
    text = message if message.lower().startswith(prefix.lower()) else f"{prefix}: {message}"
    report.reasons = [text[:1500] + where + (f" — {why}" if why and why not in text else "")]
    if res.stage and res.status in ("timeout", "crash", "no_result", "flood"):
        report.reasons.append(f"stage: {stage}/{res.stage}")


def _num(v: float | None) -> str:
    return "?" if v is None else "inf/nan" if v >= 1e300 else f"{v:.6g}"


def _trial_reason(t: TrialResult) -> str:
    """One failed trial: where it ran, the worst element with its tolerance, and the noise context."""
    weights = "re-initialised weights" if t.weights == "reinit" else "the task's weights"
    head = f"wrong output in trial {t.trial} ({t.inputs} inputs, {weights}, seed {t.seed})"
    bits = []
    if t.mismatch_fraction:
        bits.append(f"{t.mismatch_fraction:.2%} of elements beyond tolerance")
    if t.worst_index is not None and t.worst_tolerance is not None:
        if t.worst_tolerance > 0:
            ratio = "inf" if (t.max_tol_ratio or 0) >= 1e300 else f"{t.max_tol_ratio:.3g}"
            tol = f"error {ratio}x its tolerance {t.worst_tolerance:.3g} (atol + rtol*|ref|)"
        else:
            tol = "compared exactly"
        bits.append(f"worst at {t.worst_index}: candidate {_num(t.worst_candidate)} vs reference "
                    f"{_num(t.worst_reference)}, {tol}")
    elif t.first_mismatch_index is not None:
        bits.append(f"first at {t.first_mismatch_index}")
    if t.max_abs_err is not None and t.max_abs_err > 0:
        rel = f", max rel err {_num(t.max_rel_err)}" if t.max_rel_err else ""
        bits.append(f"max abs err {_num(t.max_abs_err)}{rel}")
    if t.noise is not None and t.noise.text:
        bits.append(t.noise.text)
    what = "; ".join(p for p in t.problems if not p.startswith("note:") and "elements differ beyond" not in p)
    return f"{head}: {'; '.join(bits)}{'; ' + what[:400] if what else ''}"


def _diagnosis(trials: list[TrialResult]) -> str:
    """What the failed trials together point at; empty when nothing failed or a layout problem
    (shape, dtype, count) already says it."""
    bad = [t for t in trials if not t.ok]
    good = [t for t in trials if t.ok]
    if not bad or any(t.worst_index is None for t in bad):
        return ""
    if any(t.call_dependent for t in bad):
        return ("the same call on the same inputs and weights gives other outputs when made again: state kept "
                "between calls (a counter, a cache, a buffer reused before it is written) or a race; compute each "
                "call from its inputs and weights alone")
    if any(t.right_as_built for t in bad):
        return ("right with the weights ModelNew builds itself, wrong with Model's by name: it changes its "
                "parameters as it builds them (folds, scales or transposes them in place); keep them as Model holds "
                "them and do that in forward")
    if any(t.nan_count or (t.max_abs_err or 0) >= 1e300 for t in bad):
        return ("NaN or inf where the reference is finite: uninitialised memory, a division by zero or an "
                "overflow (exp without subtracting the max, a narrow accumulator)")
    # small errors are rounding or a slightly wrong formula wherever they show up: larger weights or
    # heavier-tailed inputs only make them cross the tolerance
    rel = max(t.max_rel_err or 0.0 for t in bad)
    small, scope = rel <= 0.02, ""
    if all(t.weights == "reinit" for t in bad) and any(t.weights == "task" for t in good):
        if not small:
            return ("only trials with re-initialised weights fail: the candidate does not compute with the model's "
                    "current parameters (it copies, caches or hard-codes them at construction or on its first "
                    "call, or reads a buffer of its own); read the weights from the module's parameters on every "
                    "forward")
        scope = "only with re-initialised weights; "
    elif all(t.inputs != "task" for t in bad) and any(t.inputs == "task" for t in good):
        dists = ", ".join(sorted({t.inputs for t in bad}))
        if not small:
            return (f"only {dists} inputs fail (the task's own inputs pass): values outside the task's range break "
                    "it (a clamp or range assumption, a lookup table, overflow in a narrow type, an approximation "
                    "that holds only near the task's values)")
        scope = f"only on {dists} inputs, whose larger values make them cross the tolerance; "
    noises = [t.noise for t in bad if t.noise is not None and t.noise.measured and t.noise.within_noise is not None]
    if noises and all(n.within_noise for n in noises):
        return ("within the reference's own rounding noise: the difference is summation order, not a bug; the "
                "tolerance is tighter than float32 rounding here (tolerance='kernelbench' compares as "
                "KernelBench does)")
    if small:
        return _small_error_diagnosis(rel, noises, scope)
    frac = max(t.mismatch_fraction or 0.0 for t in bad)
    if frac < 0.5:
        return (f"large errors at {frac:.1%} of the elements: indexing and bounds (the tail when a size is not a "
                "multiple of the block, strides, grid coverage, edges of a window or padding)")
    return (f"wrong at {frac:.0%} of the elements by large amounts: the computation itself differs (a missing or "
            "extra operation, a wrong constant or axis, a transposed operand)")


def _small_error_diagnosis(rel: float, noises: list, scope: str = "") -> str:
    """Errors of at most a few percent of the output's magnitude: rounding, or a slightly wrong formula."""
    head = f"small errors ({scope}at most {rel:.2g} of the output's magnitude"
    if noises and all(n.reference_max_abs == 0 for n in noises):
        return (head + "), and the reference is exact in float32 here (a float64 run gives the same values), so "
                "rounding in the reference's own order does not explain them: a slightly wrong constant or formula "
                "(a scale, an epsilon, an approximation such as __expf or tanh-GELU), or values kept in "
                "float16/bfloat16")
    ratio = max((n.error_to_noise or 0.0) for n in noises) if noises else 0.0
    if noises and ratio <= 100:
        return (head + f", {ratio:.3g}x the reference's own float32 noise): summation order or a slightly less "
                "precise accumulation (a tree vs a sequential sum, fused multiply-adds), not indexing")
    times = f", {ratio:.3g}x the reference's own noise" if ratio else ""
    return (head + f"{times}): accumulation precision, not indexing: a float16/bfloat16/TF32 accumulator or "
            "operands rounded to them, fast-math intrinsics (__expf, -use_fast_math), or a slightly wrong "
            "constant; accumulate in float32 as the reference does")


def _verdict(report: CheckReport) -> None:
    reasons = []
    errors = [f for f in report.integrity.findings if f.severity == "error"]
    for f in errors:
        reasons.append(f"integrity: {f.code}: {f.message}")
    bad = [t for t in report.correctness.trials if not t.ok]
    for t in bad[:2]:
        reasons.append(_trial_reason(t))
    if bad and report.correctness.diagnosis:
        reasons.append(f"diagnosis: {report.correctness.diagnosis}")
    if not report.correctness.trials:
        reasons.append("no correctness trial ran")
    # correctness failures first unless an integrity finding explains them
    if bad and errors and errors[0].code not in ("unwritten_output", "result_reuse", "constant_output",
                                                 "tolerance_exploit", "stream_sync"):
        reasons = reasons[len(errors):] + reasons[:len(errors)]
    if reasons:
        report.verdict = "fail"
        report.reasons = reasons
    else:
        report.verdict = "pass"
        report.reasons = []


def _tolerance_text(c: CorrectnessReport) -> str:
    if c.atol is None:
        return ""
    preset = f"{c.tolerance} tolerance: " if c.tolerance else ""
    dtype = f" for {c.output_dtype}" if c.output_dtype else ""
    return f"{preset}atol={c.atol:g}, rtol={c.rtol:g}{dtype}"


def _summary(report: CheckReport) -> str:
    head = f"verdict: {report.verdict} (candidate {report.candidate_id}, task {report.task_id})"
    lines = [head]
    if report.verdict == "pass":
        c = report.correctness
        worst = max((t.max_tol_ratio or 0.0 for t in c.trials), default=0.0)
        used = f", worst element at {worst:.2g} of its tolerance" if worst else ""
        lines.append(f"Correct on {len(c.trials)} trials ({', '.join(sorted({t.inputs for t in c.trials}))} inputs; "
                     f"{_tolerance_text(c)}{used}); {len(report.integrity.checks_run)} integrity checks clean.")
        t = report.timing
        if t.candidate:
            parts = [f"candidate {t.candidate.median_ms:.4g} ms (IQR {t.candidate.iqr_ms:.2g})"]
            if t.eager and report.speedup_vs_eager is not None:
                parts.append(f"eager {t.eager.median_ms:.4g} ms -> {report.speedup_vs_eager:.3g}x")
            if t.compiled and report.speedup_vs_compile is not None:
                parts.append(f"torch.compile {t.compiled.median_ms:.4g} ms -> {report.speedup_vs_compile:.3g}x")
            elif t.compile_note:
                parts.append(t.compile_note)
            if t.floor_fraction is not None:
                parts.append(f"{t.floor_fraction:.0%} of its {t.floor_bound or 'memory'}-bound roofline floor")
            lines.append("Timing: " + "; ".join(parts) + ".")
            if t.eager_note:  # a speedup lower than the rooms' interleaved times show: say why
                lines.append(f"Eager: {t.eager_note}.")
            if t.harness_withheld:
                lines.append(f"On this CPU clock a gain over eager within what the harness costs a call "
                             f"({t.harness_ms or 0:.3g} ms, which a room can skip"
                             + ("; in single calls its door as well, timing.batch.note" if t.batch else "")
                             + ") is not credited: the speedup is a lower bound; a GPU times the kernel itself.")
            if t.batch and t.batch.capped:
                lines.append(f"Its room timed {t.batch.room_ms:.4g} ms a call: too short for the judge's clock to "
                             "check on this host (timing.batch.note), so no speedup over eager is credited beyond "
                             "what that clock shows.")
            if t.batch and t.batch.lowered and t.batch.speedup:
                lines.append(f"Back to back on the judge's clock it was {t.batch.speedup:.3g}x eager at the lower "
                             "of two readings that disagree about its room's times (timing.batch.note): that stands.")
            if report.speedup_vs_eager is not None and report.speedup_vs_eager < 1:
                lines.append("Next: it is slower than eager; profile it with profile_kernel.")
        else:
            lines.append("Timing was not requested.")
    else:
        lines.append("Fix first: " + (report.reasons[0] if report.reasons else "see the report"))
        for r in [r for r in report.reasons[1:] if not r.startswith("diagnosis: ")][:2]:
            lines.append(f"Also: {r}")
        c = report.correctness
        if c.diagnosis and any(not t.ok for t in c.trials):
            lines.append(f"Likely cause: {c.diagnosis}.")
        if any(not t.ok for t in c.trials) and c.atol is not None:
            lines.append(f"Compared with the {_tolerance_text(c)}.")
        if report.error_kind == "compile_error" and report.build.diagnostics:
            d = report.build.diagnostics[0]
            if d.source_line:
                lines.append(f"Offending line: {d.source_line}")
    warn = [f for f in report.integrity.findings if f.severity != "error"]
    for f in warn[:2]:
        lines.append(f"Note: {f.code}: {f.message}")
    return "\n".join(lines)


def _check_on_ray(report: CheckReport, task, cand, ws, t_start: float, progress: Progress, session: str | None,
                  **options) -> CheckReport:
    """The same check as a one-GPU Ray task on whichever node Ray picks; stored here."""
    from stitch_mcp.executor import run_remote

    def as_source(text: str) -> str:  # a string with a newline is read as source, never as a path
        return text if "\n" in text else text + "\n"

    out = run_remote("stitch_mcp.check:compile_and_check",
                     {"candidate": as_source(cand.source), "reference": as_source(task.source), **options}, progress)
    remote = CheckReport.model_validate(out["result"])
    remote.route = None
    remote.notes.append(f"ran on Ray node {out['node_id'][:12]}, GPU ids {out['gpu_ids'] or 'none'}")
    return _finish(remote, ws, t_start, session)


def _finish(report: CheckReport, ws, t_start: float, session: str | None = None) -> CheckReport:
    from stitch_mcp.loop import route_after

    report.stage_seconds["total"] = round(time.monotonic() - t_start, 3)
    report.summary = _summary(report)
    ws.add_report("check", report, task_id=report.task_id, candidate_id=report.candidate_id)
    try:
        report.route = route_after(report.task_id, report.candidate_id, session=session, check=report)
    except Exception:  # routing must not lose the verdict
        log.exception("route_after failed")
    return report


# ------------------------------------------------------------------ baselines cache


def _cached_baselines(ws, task_id: str, timing_iters: int) -> dict[str, Any]:
    """The task's stored baselines per device, for the judge's spec. The store keeps records that
    earlier versions wrote: their times keep only the fields the run stage's result may carry
    (stage_results.MeasuredTimes forbids others), and a record with neither valid eager times nor
    a valid time of the eager room alone is left out."""
    body = ws.latest_report("baseline", task_id=task_id) or {}
    cached = {}
    for dev, b in (body.get("devices") or {}).items():
        if not isinstance(b, dict) or b.get("timing_iters") != timing_iters or b.get("clock", "wall") != _clock(dev):
            continue
        eager, compiled, room = (valid_records(MeasuredTimes, [b.get(k)]) for k in ("eager", "compiled", "eager_room"))
        if eager or room:
            cached[dev] = {**b, "eager": eager[0].model_dump() if eager else None,
                           "compiled": compiled[0].model_dump() if compiled else None,
                           "eager_room": room[0].model_dump() if room else None}
    return cached


class _Presence:
    """One check in _TaskActivity: entered when the check starts, left once nothing of its
    candidate runs any more (its build room ended, its run stages' workers exited)."""

    def __init__(self, activity: _TaskActivity, task_id: str):
        self.activity, self.task_id = activity, task_id
        self._left = False
        self.gone = False  # counted out of the task's running checks

    def leave_after(self, exits: list[threading.Event]) -> None:
        """Leave once every event in `exits` is set (at once when none is given); the first call counts."""
        if self._left:
            return
        self._left = True

        def leave() -> None:
            for ended in exits:
                ended.wait(timeout=3600)
            self.activity.leave(self)

        if all(e.is_set() for e in exits):
            leave()
        else:
            threading.Thread(target=leave, name=f"leave-{self.task_id}", daemon=True).start()


class _TaskActivity:
    """The checks of each task in this server whose candidate may still run, and how many have
    started. The baseline worker times a task's baselines only where none ran from before the
    timing to after it (correctness._time_quietly reads "<running> <started>" from the files
    watching the task): a candidate that kept the GPU busy outside the device lease (at import,
    in its first call, from a thread) while they are timed would make every later candidate of
    the task look faster."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._started: dict[str, int] = {}
        self._watching: dict[str, list[Path]] = {}

    def enter(self, task_id: str) -> _Presence:
        with self._lock:
            self._running[task_id] = self._running.get(task_id, 0) + 1
            self._started[task_id] = self._started.get(task_id, 0) + 1
            self._write(task_id)
        return _Presence(self, task_id)

    def leave(self, presence: _Presence) -> None:
        task_id = presence.task_id
        with self._lock:
            presence.gone = True
            self._running[task_id] -= 1
            self._write(task_id)

    def others_running(self, presence: _Presence) -> bool:
        """Whether a check of the task other than `presence`'s is running."""
        with self._lock:
            return self._running.get(presence.task_id, 0) > (0 if presence.gone else 1)

    def quiet_mark(self, presence: _Presence) -> int | None:
        """How many checks of the task have started, where none but `presence`'s runs now (else None):
        quiet_since tells whether that is still so."""
        with self._lock:
            if self._running.get(presence.task_id, 0) > (0 if presence.gone else 1):
                return None
            return self._started.get(presence.task_id, 0)

    def quiet_since(self, presence: _Presence, mark: int | None) -> bool:
        """Whether no check of the task but `presence`'s ran from quiet_mark's `mark` to now."""
        return mark is not None and self.quiet_mark(presence) == mark

    def watch(self, task_id: str, path: Path) -> None:
        """Keep `path` holding the task's "<running> <started>" from now until unwatch."""
        with self._lock:
            self._watching.setdefault(task_id, []).append(path)
            self._write(task_id)

    def unwatch(self, task_id: str, path: Path) -> None:
        with self._lock:
            paths = self._watching.get(task_id, [])
            if path in paths:
                paths.remove(path)
            if not paths:
                self._watching.pop(task_id, None)

    def _write(self, task_id: str) -> None:
        state = f"{self._running.get(task_id, 0)} {self._started.get(task_id, 0)}\n"
        for path in self._watching.get(task_id, []):
            with contextlib.suppress(OSError):  # its worker's folder is gone: unwatch follows
                path.write_text(state)


_task_activity = _TaskActivity()
_baseline_runs: dict[str, threading.Thread] = {}  # task_id -> the baseline worker's thread timing it now
# task_id -> when its baseline worker last failed: for a while its judges time torch.compile themselves
_baseline_failed: dict[str, float] = {}
BASELINE_RETRY_S = 600.0
_baseline_runs_lock = threading.Lock()


def _start_baselines(task, ws, settings, presence: _Presence, *, timing: bool, compare_compile: bool,
                     alone_ok: bool = True) -> threading.Thread | None:
    """Time the reference (eager and torch.compile) on a GPU in a worker of its own where the task's
    cache does not settle torch.compile yet and another check of the task runs (`alone_ok`: a check
    alone on its task leaves it to its judge: _compile_in_judge);
    one such worker per task at a time (a check that finds one running waits for that one). Returns
    its thread, or None where none is needed, or where one failed for the task in the last
    BASELINE_RETRY_S (its judges time it then)."""
    from stitch_mcp.correctness import compile_baseline_known

    if not (timing and compare_compile and _cuda_possible()):
        return None
    with _baseline_runs_lock:
        running = _baseline_runs.get(task.task_id)
        if running is not None and running.is_alive():
            return running
        if time.monotonic() - _baseline_failed.get(task.task_id, -BASELINE_RETRY_S) < BASELINE_RETRY_S or \
                any(map(compile_baseline_known, _cached_baselines(ws, task.task_id, settings.timing_iters).values())):
            return None
        if alone_ok and not _task_activity.others_running(presence):
            return None
        thread = _time_baselines(task.source, task.task_id, compare_compile)
        _baseline_runs[task.task_id] = thread
        return thread


def _time_baselines(reference_source: str, task_id: str, compare_compile: bool) -> threading.Thread:
    """Start a thread that times the reference in the baseline worker (correctness.baseline_stage)
    and stores the result as the task's baselines; join it. The worker compiles at once and times
    while no check of the task is running (_TaskActivity). It outlives the check that started it (a
    failed build, a cancelled call): the task's next candidate uses what it measures. The worker
    is a fresh one, not a spare: spares are for the run stages waiting on them."""
    from stitch_mcp.devices import choose_device, pin_env
    from stitch_mcp.gpu_memory import out_of_memory
    from stitch_mcp.store import get_workspace
    from stitch_mcp.worker import card_to_itself, run_worker

    settings = get_settings()
    # one set of inputs (gpu_memory.BASELINE_COPIES): the reference and torch.compile's code are ours,
    # with no cache of earlier inputs to defeat
    spec = {"reference_source": reference_source, "compare_compile": compare_compile,
            "timing_iters": settings.timing_iters, "timing_seeds": [secrets.randbelow(2 ** 31 - 1)],
            "limits": _limits(settings.run_timeout_s, True)}

    def measure() -> None:
        workdir = Path(tempfile.mkdtemp(prefix="baseline-", dir=_work_parent(settings)))
        try:
            gpu = choose_device()  # the worker holds its GPU memory, then the device (correctness.baseline_stage)
            spec["lease_gpu"] = dataclasses.asdict(gpu) if gpu else None
            spec["activity_file"] = str(workdir / "activity")
            _task_activity.watch(task_id, workdir / "activity")
            env = pin_env(gpu)  # one compile thread (worker.worker_env): how long compiling takes, not its kernels
            res = run_worker("baseline", spec, workdir=workdir / "1", timeout_s=settings.run_timeout_s, spare=False,
                             env=env, until_result=True)
            if not res.ok and out_of_memory(f"{res.kind} {res.message}"):  # its share was too small: the whole card
                spec["whole_card"] = True
                with card_to_itself():
                    res = run_worker("baseline", spec, workdir=workdir / "2", timeout_s=settings.run_timeout_s,
                                     spare=False, env=env, until_result=True)
            if res.ok:
                _store_baselines(get_workspace(), task_id, res.result, settings.timing_iters)
            else:  # the task's next run stages time them themselves
                _baseline_failed[task_id] = time.monotonic()
                log.warning("the baseline worker: %s %s", res.kind, res.message[:300])
        except Exception:
            _baseline_failed[task_id] = time.monotonic()
            log.exception("the baseline worker failed")
        finally:
            _task_activity.unwatch(task_id, workdir / "activity")
            shutil.rmtree(workdir, ignore_errors=True)

    thread = threading.Thread(target=measure, name=f"baselines-{task_id}", daemon=False)
    thread.start()
    return thread


def _clock(device: str) -> str:
    """The clock a device's times are taken on: a CPU's rooms by their cgroup's CPU, one core each,
    where this host gives cpusets (stitch_mcp.cpusets), else the wall clock (CUDA events on a GPU).
    Cached times of the other clock are not compared with these (single-core CPU time against a
    multi-threaded wall time)."""
    from stitch_mcp.cpusets import unavailable

    return "cpu" if device == "cpu" and not unavailable() else "wall"


def _eager_room(out: RunStageResult | BaselineStageResult, cached: dict | None) -> dict | None:
    """The eager room's time alone (judge.timing.eager_agrees) to cache, if any: only from a check
    with no finding whose room's times stood (not raised to its batches'), and never above the
    cached one, so that no candidate (nor a host busy for a while) can raise the time that later
    checks' eager is held to. Timed again, it is fresh again."""
    alone = out.timing.eager_alone if isinstance(out.timing, RunTiming) else None
    corrected = isinstance(out.timing, RunTiming) and out.timing.batch is not None and out.timing.batch.room_ms
    if alone is None or out.findings or corrected or not all(t.ok for t in out.trials):
        return None
    if cached and cached.get("median_ms", float("inf")) <= alone.median_ms:
        return cached
    return alone.model_dump()


def _store_baselines(ws, task_id: str, out: RunStageResult | BaselineStageResult, timing_iters: int) -> None:
    """Cache the baselines a judge (or the baseline worker) timed with no candidate process alive;
    never the eager time measured beside a candidate."""
    if out.timing is None:
        return
    clean = out.timing.clean_baselines if isinstance(out.timing, RunTiming) else out.timing

    def merged(body: dict | None) -> dict | None:
        devices = dict((body or {}).get("devices") or {})
        record = dict(devices.get(out.device) or {})
        if record.get("timing_iters") != timing_iters or record.get("clock", "wall") != _clock(out.device):
            record = {}
        room = _eager_room(out, record.get("eager_room"))
        if clean is None and room is None:
            return None
        if clean is not None:
            record.update({"eager": clean.eager.model_dump(),
                           "compiled": clean.compiled.model_dump() if clean.compiled else None,
                           "compile_note": clean.compile_note})
        if room is not None:
            record["eager_room"], record["eager_room_at"] = room, time.time()
        devices[out.device] = {**record, "timing_iters": timing_iters, "clock": _clock(out.device),
                               "measured_at": time.time()}
        return {"devices": devices}

    ws.update_report("baseline", task_id, merged)
