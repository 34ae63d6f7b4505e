"""profile_reference: where a reference program spends its GPU time (issue 4).

Runs the driver (stitch_mcp.profiling.driver) in a child process under Nsight Systems when this
machine's nsys can write a report, else under torch.profiler; parses the trace into a Trace and
digests it (trace.digest); draws a timeline of one iteration.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import ReferenceProfile
from stitch_mcp.profiling.runner import keep_work_dir, python_env, python_exe, run_group, tail

log = logging.getLogger(__name__)

BACKENDS = ("auto", "nsys", "torch")


def _choose_backend(backend: str) -> tuple[str, list[str]]:
    if backend not in BACKENDS:
        raise UserError(f"backend: unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    notes: list[str] = []
    if backend == "torch":
        return "torch", notes
    from stitch_mcp.profiling import nsys_status

    ok, detail = nsys_status()
    if ok:
        return "nsys", notes
    if backend == "nsys":
        notes.append(f"nsys was asked for but cannot be used here ({detail}); used torch.profiler instead")
    else:
        notes.append(f"backend auto: {detail}; used torch.profiler")
    return "torch", notes


def driver_error(work: Path, what: str) -> UserError | None:
    err = work / "error.json"
    if not err.exists():
        return None
    try:
        e = json.loads(err.read_text())
    except ValueError:
        return UserError(f"{what} failed (unreadable error report)")
    tb = e.get("traceback", "")
    last = "\n".join(tb.strip().splitlines()[-6:])
    return UserError(f"{what} failed while running {e.get('stage')}: {e.get('type')}: {e.get('message')}\n{last}")


@contextlib.contextmanager
def device_lease(progress: Progress, notes: list[str], step: float, total: float):
    """Hold a device for a profiler run, as compile_and_check's run stage does: two profiles (or a
    profile and a timing) never share a GPU, or each would read the other's load (seen: 1.4-1.8x).
    Yields the environment that pins the profiled process to the leased GPU."""
    from stitch_mcp.devices import acquire_device

    progress.update(step, total, "waiting for a free device")
    with acquire_device(check_cancel=progress.check) as lease:
        if lease.waited_s >= 1.0:
            notes.append(f"waited {lease.waited_s:.0f} s for {lease.label}: another verification or profile was "
                         "using it (profiles take the device in turn, so its load is not in these numbers)")
        if lease.note:
            notes.append(lease.note)
        yield lease.worker_env()


def _candidate_build(work: Path, cand_path: Path) -> Path:
    """A copy of the candidate source's built extensions inside the profile's folder (the only
    folder its sandbox sees): the driver imports them instead of building again under ncu."""
    from stitch_mcp.build_room import publish_build
    from stitch_mcp.check import candidate_scope

    scope = candidate_scope(get_settings().build_dir, cand_path.read_text(encoding="utf-8"))
    build = work / "build"
    publish_build(scope, build)
    return build


def run_driver(mode: str, work: Path, ref_path: Path, *, iterations: int, warmup: int, timeout_s: float,
               progress: Progress | None, prefix: list[str] | None = None,
               cand_path: Path | None = None, lineinfo: bool = False, what: str = "the reference",
               env: dict[str, str] | None = None):
    cmd = (prefix or []) + [python_exe(), "-m", "stitch_mcp.profiling.driver", mode, "--ref", str(ref_path),
                            "--out", str(work), "--iters", str(iterations), "--warmup", str(warmup)]
    if cand_path is not None:
        cmd += ["--cand", str(cand_path)]
    if lineinfo:
        cmd.append("--lineinfo")
    if cand_path is not None:  # the candidate's extensions as compile_and_check built them, copied in
        cmd += ["--build-root", str(_candidate_build(work, cand_path))]
    res = run_group(cmd, timeout_s=timeout_s, cwd=work, env={**python_env(), **(env or {})}, progress=progress,
                    log_path=work / "run.log", sandboxed=cand_path is not None)
    if res.cancelled:
        from stitch_mcp.jobs import Cancelled

        raise Cancelled("cancelled by the caller; the profiler was stopped")
    if res.timed_out:
        raise UserError(f"profiling {what} timed out after {timeout_s:.0f} s (STITCH_PROFILE_TIMEOUT_S); the "
                        f"profiler and its children were killed. Output tail:\n{tail(res.output, 1500)}")
    return res


def profile_reference(*, reference: str | None = None, task_id: str | None = None, backend: str = "auto",
                      iterations: int = 5, progress: Progress | None = None) -> ReferenceProfile:
    from stitch_mcp.sources import resolve_task
    from stitch_mcp.store import get_workspace

    if not 1 <= int(iterations) <= 100:
        raise UserError("iterations: give 1 to 100")
    task = resolve_task(reference, task_id)
    used, notes = _choose_backend(backend)
    settings = get_settings()
    progress = progress or Progress()
    progress.update(0, 4, f"profiling {task.name} with {used}")
    started = time.monotonic()
    base = settings.cache_dir / "profiles"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"ref-{task.task_id}-", dir=base))
    try:
        ref_path = work / "reference.py"
        ref_path.write_text(task.source, encoding="utf-8")
        prof, ceil = _run(used, work, ref_path, iterations, settings.profile_timeout_s, progress,
                          image_name=f"timeline-{task.task_id}.png")
    finally:
        keep_work_dir(work)
        shutil.rmtree(work, ignore_errors=True)
    prof.task_id = task.task_id
    prof.notes = notes + prof.notes
    prof.notes.append(f"profiled in {time.monotonic() - started:.1f} s")
    from stitch_mcp.profiling.trace import summary_text  # re-render with the final notes

    prof.summary = f"task_id {task.task_id}\n" + summary_text(prof, ceil)
    if prof.image_uri:
        prof.summary += f"\ntimeline image: {prof.image_uri}"
    get_workspace().add_report("profile_reference", prof, task_id=task.task_id)
    progress.update(4, 4, "done")
    return prof


def _run(used: str, work: Path, ref_path: Path, iterations: int, timeout_s: float,
         progress: Progress, image_name: str = "timeline.png"):
    from stitch_mcp.profiling import plots
    from stitch_mcp.ceilings import ceilings_for, cpu_ceilings
    from stitch_mcp.profiling.trace import digest

    prefix, cupti = None, {}
    if used == "nsys":
        from stitch_mcp.cuda_tools import find_tool
        from stitch_mcp.profiling import NSYS_PROFILE_FLAGS, nsys_cupti_env

        prefix = [find_tool("nsys"), "profile", *NSYS_PROFILE_FLAGS, "-o", str(work / "report")]
        cupti = nsys_cupti_env(prefix[0], work / "cupti")
    lease_notes: list[str] = []
    with device_lease(progress, lease_notes, 1, 4) as pinned:
        progress.update(1, 4, f"running the reference under {used}")
        res = run_driver(used, work, ref_path, iterations=iterations, warmup=2, timeout_s=timeout_s,
                         progress=progress, prefix=prefix, env={**(pinned or {}), **cupti})
    err = driver_error(work, "the reference")
    if err is not None:
        raise err
    if res.returncode != 0 or not (work / "meta.json").exists():
        raise UserError(f"the reference run failed (exit {res.returncode}). Output tail:\n{tail(res.output, 2000)}")
    meta = json.loads((work / "meta.json").read_text())
    progress.update(2, 4, "parsing the trace")
    if used == "nsys":
        from stitch_mcp.profiling.nsys import parse_sqlite

        rep = next(iter(work.glob("report*.nsys-rep")), None)
        if rep is None:
            raise UserError(f"nsys wrote no report. Output tail:\n{tail(res.output, 1500)}")
        exp = run_group([prefix[0], "export", "--type", "sqlite", "--force-overwrite", "true",
                         "-o", str(work / "report.sqlite"), str(rep)], timeout_s=timeout_s, cwd=work,
                        progress=progress, log_path=work / "export.log")
        if exp.returncode != 0 or not (work / "report.sqlite").exists():
            raise UserError(f"nsys export failed. Output tail:\n{tail(exp.output, 1500)}")
        trace = parse_sqlite(work / "report.sqlite")
        trace.device = trace.device or meta.get("device", "")
    else:
        from stitch_mcp.profiling.torchprof import parse_chrome_trace

        trace = parse_chrome_trace(work / "trace.json", device=meta.get("device", ""), on_gpu=meta.get("on_gpu"))
    if meta.get("on_gpu"):
        ceil = ceilings_for(meta.get("device"), meta.get("sm_count"), meta.get("clock_khz"),
                            (meta.get("cc") or [None])[0])
    else:
        ceil = cpu_ceilings()
    progress.update(3, 4, "digesting")
    prof = digest(trace, ceil, meta.get("costs") or {}, meta.get("wall_ms"))
    prof.notes.extend(lease_notes)
    if meta.get("costs_error"):
        prof.notes.append(f"FLOP/byte counting failed: {meta['costs_error']}")
    try:
        settings = get_settings()
        name = image_name
        out = plots.timeline_png(trace, settings.artifacts_dir / name,
                                 title=f"reference: one iteration on {trace.device} ({trace.backend})")
        if out is not None:
            prof.image_uri = f"stitch://artifacts/{name}"
    except Exception as exc:  # a picture must never cost the digest
        log.warning("timeline image failed: %s", exc)
        prof.notes.append(f"timeline image failed: {type(exc).__name__}")
    return prof, ceil
