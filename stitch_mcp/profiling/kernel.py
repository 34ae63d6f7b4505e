"""profile_kernel: an Nsight Compute digest of a candidate's kernels (issue 4).

ncu runs the driver (stitch_mcp.profiling.driver ncu) in its own process group: the driver builds
the candidate, makes the reference's inputs, runs one warm-up forward, then one forward between
cudaProfilerStart/Stop (`--profile-from-start off`), so only that forward's kernels are measured.
The report is read through ncu_report (in a child process) when importable, else `--csv --page raw`.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import time
from pathlib import Path

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import KernelDigest, KernelProfile
from stitch_mcp.profiling import ncu as N
from stitch_mcp.profiling.reference import device_lease, driver_error, run_driver
from stitch_mcp.profiling.runner import keep_work_dir, python_env, python_exe, run_group, tail

log = logging.getLogger(__name__)

def custom_kernel_names(source: str) -> list[str]:
    """Names of the __global__ functions a candidate defines (in its CUDA source strings)."""
    from stitch_mcp.profiling.names import global_kernel_names

    return global_kernel_names(source)


def _resolve(candidate, candidate_id, reference, task_id, session=None):
    from stitch_mcp.sources import resolve_candidate, resolve_task
    from stitch_mcp.store import get_workspace

    task = None
    if reference or task_id:
        task = resolve_task(reference, task_id)
    elif candidate_id:
        task = get_workspace().task(get_workspace().candidate(candidate_id).task_id)
    if candidate is None and candidate_id is None:
        raise UserError("candidate: give `candidate` (path or source) or `candidate_id`")
    if task is None:
        raise UserError("reference: a new candidate needs `reference` or `task_id` (its inputs come from the task)")
    return task, resolve_candidate(candidate, candidate_id, task, session=session)


def profile_kernel(*, candidate: str | None = None, candidate_id: str | None = None, reference: str | None = None,
                   task_id: str | None = None, kernel_filter: str | None = None, launch_skip: int = 0,
                   launch_count: int = 5, sections: str = "quick", session: str | None = None,
                   progress: Progress | None = None) -> KernelProfile:
    from stitch_mcp.store import get_workspace

    if sections not in N.SECTIONS:
        raise UserError(f"sections: unknown preset {sections!r}; use one of {', '.join(N.SECTIONS)}")
    if launch_skip < 0 or not 1 <= launch_count <= 50:
        raise UserError("launch_skip must be >= 0 and launch_count 1..50")
    filt = N.kernel_filter_arg(kernel_filter)
    task, cand = _resolve(candidate, candidate_id, reference, task_id, session)
    ncu = N.find_ncu()
    if ncu is None:
        raise UserError(N.which_ncu_missing_message())
    settings = get_settings()
    progress = progress or Progress()
    progress.update(0, 4, "starting ncu")
    started = time.monotonic()
    base = settings.cache_dir / "profiles"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"ncu-{cand.candidate_id}-", dir=base))
    try:
        (work / "reference.py").write_text(task.source, encoding="utf-8")
        (work / "candidate.py").write_text(cand.source, encoding="utf-8")
        prof = _profile(ncu, work, cand.source, filt, kernel_filter, launch_skip, launch_count, sections,
                        settings, progress, image_name=f"roofline-{cand.candidate_id}.png")
    finally:
        keep_work_dir(work)
        shutil.rmtree(work, ignore_errors=True)
    prof.task_id, prof.candidate_id = task.task_id, cand.candidate_id
    floor = check_floor_note(get_workspace().latest_report("check", candidate_id=cand.candidate_id))
    if floor:
        prof.notes.append(floor)
    prof.notes.append(f"profiled in {time.monotonic() - started:.1f} s")
    prof.summary = summary_text(prof)
    get_workspace().add_report("profile_kernel", prof, task_id=task.task_id, candidate_id=cand.candidate_id)
    progress.update(4, 4, "done")
    return prof


def check_floor_note(check: dict | None) -> str | None:
    """compile_and_check's own "% of the floor" for the whole forward, quoted rather than recomputed,
    so the two answers give one number (the kernels' roofline % above use the same ceilings table)."""
    t = (check or {}).get("timing") or {}
    if not t.get("floor_fraction") or not t.get("floor_ms"):
        return None
    how = t.get("floor_note") or "bytes at the copy bandwidth"
    return (f"compile_and_check: the whole forward runs at {t['floor_fraction']:.0%} of its floor "
            f"({t['floor_ms']:.4g} ms; {how})")


def _profile(ncu: str, work: Path, source: str, filt: str | None, user_filter: str | None, launch_skip: int,
             launch_count: int, sections: str, settings, progress: Progress, image_name: str) -> KernelProfile:
    from stitch_mcp.ceilings import ceilings_for

    notes: list[str] = []
    custom = custom_kernel_names(source)
    default_filter = None
    if not filt and custom:
        default_filter = "regex:^(" + "|".join(re.escape(n) for n in custom) + ")(<.*)?$"
    timings: list[str] = []
    with device_lease(progress, notes, 1, 4) as pinned:
        res = _run_ncu(ncu, work, custom, filt, default_filter, user_filter, launch_skip, launch_count, sections,
                       settings, progress, notes, pinned, timings)
    rep = next(iter(work.glob("profile*.ncu-rep")), None)
    if rep is None:
        raise UserError(f"ncu wrote no report (exit {res.returncode if res else '?'}). Output tail:\n"
                        f"{tail(res.output if res else '', 2000)}")
    progress.update(2, 4, "reading the report")
    t_read = time.monotonic()
    launches, reader = read_report(ncu, rep, work, settings.profile_timeout_s, progress)
    timings.append(f"report read {time.monotonic() - t_read:.1f} s ({reader})")
    if not launches:
        raise UserError(f"the ncu report holds no kernel results. ncu output tail:\n{tail(res.output, 1500)}")
    first = launches[0]
    device = str(first.raw("device__attribute_display_name") or "")
    ceil = ceilings_for(device, int(first.num("device__attribute_multiprocessor_count") or 0) or None,
                        first.num("device__attribute_clock_rate"),
                        int(first.num("device__attribute_compute_capability_major") or 0) or None)
    progress.update(3, 4, "digesting")
    digests, others = N.digest_launches(launches, ceil, custom=set(custom) if custom else None)
    if sections == "source":
        for d in digests:
            if not d.hot_lines:
                notes.append(f"{d.name}: no per-line data"
                             + (" (read through CSV; ncu_report is needed for source lines)"
                                if reader != "ncu_report" else ""))
            for h in d.hot_lines:
                h.line = _candidate_line(source, h.source) or h.line
    prof = KernelProfile(device=device, sections=sections, kernels=digests, other_kernels=others[:15],
                         notes=notes + ceil.notes)
    prof.notes.append(f"{len(launches)} launch(es) profiled with --clock-control {settings.ncu_clock_control}; "
                      f"report read with {reader}")
    prof.notes.append("time: " + "; ".join(timings))
    if custom and not any(N._base_function(l.name) in custom for l in launches):
        prof.notes.append("none of the profiled kernels is one of the candidate's own __global__ kernels")
    try:
        from stitch_mcp.profiling import plots

        out = plots.roofline_png(digests, ceil, settings.artifacts_dir / image_name,
                                 title=f"candidate kernels on {device}")
        if out is not None:
            prof.image_uri = f"stitch://artifacts/{image_name}"
    except Exception as exc:
        log.warning("roofline image failed: %s", exc)
        prof.notes.append(f"roofline image failed: {type(exc).__name__}")
    return prof


def _run_ncu(ncu: str, work: Path, custom: list[str], filt: str | None, default_filter: str | None,
             user_filter: str | None, launch_skip: int, launch_count: int, sections: str, settings,
             progress: Progress, notes: list[str], pinned: dict[str, str], timings: list[str]):
    """Run the driver under ncu; retried without the FLOP counters, or without the default filter.
    Each run's seconds (and the candidate's import, i.e. build, inside it) go to `timings`."""
    extras = True
    attempt_filter = filt or default_filter
    res = None
    for _ in range(3):
        for f in work.glob("profile*.ncu-rep"):
            f.unlink()
        (work / "error.json").unlink(missing_ok=True)
        (work / "meta.json").unlink(missing_ok=True)
        progress.update(1, 4, f"ncu ({sections}) on the candidate's forward")
        cmd_prefix = N.ncu_command(ncu, sections, work / "profile", [], kernel_filter=attempt_filter,
                                   launch_skip=launch_skip, launch_count=launch_count,
                                   clock_control=settings.ncu_clock_control, extra_metrics=extras)
        res = run_driver("ncu", work, work / "reference.py", iterations=1, warmup=1,
                         timeout_s=settings.profile_timeout_s, progress=progress, prefix=cmd_prefix,
                         cand_path=work / "candidate.py", lineinfo=(sections == "source"), what="the candidate",
                         env=pinned)
        timings.append(_run_timing(work, res.seconds, len(timings) + 1))
        why = N.classify_failure(res.output)
        if why == N.PERM_HELP:
            raise UserError(N.PERM_HELP)
        err = driver_error(work, "the candidate")
        if err is not None:
            raise err
        if extras and N.unknown_metric(res.output) and not any(work.glob("profile*.ncu-rep")):
            extras = False
            notes.append("this ncu/GPU lacks the FLOP counters; roofline uses speed-of-light % instead")
            continue
        if why == "no kernels matched":
            if user_filter:
                seen = f" Its __global__ kernels: {', '.join(custom)}." if custom else ""
                raise UserError(f"kernel_filter {user_filter!r} matched no kernel launched by the candidate's forward "
                                f"(after skipping {launch_skip}).{seen} Use a substring of the kernel's name or "
                                "regex:PATTERN, or leave it out.")
            if attempt_filter:
                notes.append(f"none of the candidate's __global__ kernels ({', '.join(custom)}) ran in forward; "
                             "profiled whatever kernels ran instead")
                attempt_filter = None
                continue
            raise UserError("the candidate's forward launched no CUDA kernel that ncu could profile"
                            + (f" after skipping {launch_skip} launches" if launch_skip else ""))
        break
    return res


def _run_timing(work: Path, seconds: float, n: int) -> str:
    """'ncu run 1 41.3 s (candidate import 0.2 s, extensions from the check's build cache)'"""
    import json

    bits = []
    try:
        meta = json.loads((work / "meta.json").read_text())
    except (OSError, ValueError):
        meta = {}
    if meta.get("import_s") is not None:
        bits.append(f"candidate import {meta['import_s']:.1f} s")
    cached = meta.get("extensions_cached")
    if cached:
        bits.append("extensions from the check's build cache" if all(cached) else
                    f"{cached.count(False)} extension(s) built here (run compile_and_check first to reuse its build)")
    return f"ncu run {n} {seconds:.1f} s" + (f" ({', '.join(bits)})" if bits else "")


def _candidate_line(source: str, text: str) -> int | None:
    """The candidate .py line holding a CUDA source line (the .cu that load_inline wrote)."""
    t = (text or "").strip()
    if len(t) < 4 or t.startswith("SASS"):
        return None
    for i, line in enumerate(source.splitlines(), 1):
        if line.strip() == t:
            return i
    for i, line in enumerate(source.splitlines(), 1):
        if t in line:
            return i
    return None


def read_report(ncu: str, rep: Path, work: Path, timeout_s: float, progress: Progress | None):
    """Launches from the report: through ncu_report in a child process, else the raw CSV page."""
    import os

    dirs = N.report_python_dirs(ncu)
    if dirs:
        env = python_env()
        env["PYTHONPATH"] = os.pathsep.join(dirs + [env["PYTHONPATH"]])
        out_json = work / "report.json"
        res = run_group([python_exe(), "-m", "stitch_mcp.profiling.ncu_dump", str(rep), str(out_json)],
                        timeout_s=timeout_s, cwd=work, env=env, progress=progress, log_path=work / "dump.log")
        if res.returncode == 0 and out_json.exists():
            try:
                launches = N.parse_dump_json(out_json)
                if launches:
                    return launches, "ncu_report"
            except ValueError:
                pass
        log.info("ncu_report unavailable (%s); reading CSV", tail(res.output, 300))
    res = run_group([ncu, "-i", str(rep), "--csv", "--page", "raw"], timeout_s=timeout_s, cwd=work,
                    progress=progress, log_path=work / "raw.csv")
    return N.parse_raw_csv(res.output), "csv"


def _fmt_us(us: float | None) -> str:
    if us is None:
        return "?"
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def digest_lines(d: KernelDigest) -> list[str]:
    def pct(v):
        return "?" if v is None else f"{v:.0f}%"

    lines = [f"{d.name} grid {d.grid} block {d.block}, {d.launches} launch(es), {_fmt_us(d.duration_us)} each: "
             f"{(d.bound or '?').upper()} - {d.bound_evidence}"]
    mem = []
    if d.dram_bytes is not None:
        mem.append(f"DRAM {d.dram_bytes / 1e6:.1f} MB at {d.dram_gbps or 0:.0f} GB/s")
    mem.append(f"L1 hit {pct(d.l1_hit_pct)}, L2 hit {pct(d.l2_hit_pct)}")
    lines.append("  memory: " + "; ".join(mem))
    lines.append(f"  occupancy {pct(d.achieved_occupancy_pct)} achieved / {pct(d.theoretical_occupancy_pct)} "
                 f"theoretical ({d.occupancy_limiter or 'limiter unknown'}); {d.registers_per_thread} regs/thread, "
                 f"{d.shared_mem_bytes} B smem/block, spills "
                 f"{'?' if d.spill_bytes is None else d.spill_bytes}; tensor pipe {pct(d.tensor_pipe_pct)}")
    if d.arithmetic_intensity is not None:
        lines.append(f"  roofline: {d.arithmetic_intensity:.2f} FLOP/B, at {pct(d.roofline_pct)} of the attainable "
                     "rate for that intensity")
    if d.stalls:
        lines.append("  stalls: " + ", ".join(f"{s.reason} {s.share:.0%}" for s in d.stalls))
    for s in d.suggestions:
        lines.append(f"  {s.rank}. {s.text} [{s.metric.split('.')[0]} = {s.value}] "
                     f"-> search_cuda_docs(\"{s.doc_query}\")")
    for h in d.hot_lines:
        where = f"L{h.line}" if h.line else "?"
        lines.append(f"  hot {where} {h.share:.0%} ({h.top_stall}): {h.source[:100]}")
    return lines


def summary_text(p: KernelProfile, max_chars: int = 7500) -> str:
    lines = [f"profile_kernel [{p.sections}] candidate {p.candidate_id} (task {p.task_id}) on {p.device}: "
             f"{len(p.kernels)} kernel(s) digested"]
    for d in p.kernels:
        lines += digest_lines(d)
    if p.other_kernels:
        lines.append("other kernels in the profiled forward: " + "; ".join(p.other_kernels[:8]))
    if p.image_uri:
        lines.append(f"roofline image: {p.image_uri}")
    for n in p.notes:
        lines.append(f"note: {n}")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 20] + "\n... (truncated)"
