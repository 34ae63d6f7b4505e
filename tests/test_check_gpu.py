"""compile_and_check on a GPU: the CUDA-only findings and failure modes (skipped without CUDA).

Run on the GPU machine with tools/gpu/check_gpu.sh. Every candidate shares the same binding source,
so the binding object (main.o, all of torch/extension.h) is compiled once and each candidate only
compiles its own kernel translation unit.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from stitch_mcp.check import compile_and_check
from stitch_mcp.config import configure, get_settings

pytestmark = pytest.mark.gpu

PROGRAMS = Path(__file__).resolve().parent / "programs"
REF = str(PROGRAMS / "gpu_ref_relu.py")
# The honest candidate's cold check must build cold (its baselines are timed while it builds): other
# GPU tests build gpu_cand_relu.py into the same cache, so this run's text is its own.
HONEST = (PROGRAMS / "gpu_cand_relu.py").read_text() + f"\n# this test run's own build: {uuid.uuid4().hex}\n"


def check(cand: str, **kw):
    kw.setdefault("timing", False)
    kw.setdefault("compare_compile", False)
    source = HONEST if cand == "gpu_cand_relu" else str(PROGRAMS / f"{cand}.py")
    return compile_and_check(reference=REF, candidate=source, **kw)


def codes(report) -> set[str]:
    return {f.code for f in report.integrity.findings if f.severity == "error"}


@pytest.fixture(scope="module")
def honest():
    t0 = time.monotonic()
    r = check("gpu_cand_relu", timing=True, compare_compile=True)
    return r, time.monotonic() - t0


def test_honest_cuda_candidate_passes(honest):
    r, cold_s = honest
    assert r.verdict == "pass", r.summary
    assert r.device and r.device != "cpu"
    assert r.timing.method.startswith("CUDA events in each program's room")
    assert r.timing.candidate and r.timing.eager and r.speedup_vs_eager
    assert r.timing.floor_ms and 0 < r.timing.floor_fraction <= 1.2
    assert {"timing_bracket", "physical_floor"} <= set(r.integrity.checks_run)
    assert r.isolation
    # alone on its task: its judge compiled torch.compile's baseline before its share, timed it after its rooms
    assert r.timing.compiled and r.speedup_vs_compile and not r.timing.baselines_cached, r.timing.compile_note
    assert "compile_ahead" in r.stage_seconds
    assert "compile_fake" in r.stage_seconds  # compiled on fake tensors before its compile share
    assert r.build.extensions[0].kernel_header == "ATen per-operator"
    print(f"\ncold check {cold_s:.1f} s: {r.stage_seconds}; {r.summary}")


def test_already_built_candidate_is_fast(honest):
    t0 = time.monotonic()
    r = check("gpu_cand_relu", timing=True, compare_compile=True)
    warm_s = time.monotonic() - t0
    assert r.verdict == "pass", r.summary
    assert r.build.cached and r.timing.baselines_cached
    print(f"\nwarm check {warm_s:.1f} s: {r.stage_seconds}")
    assert warm_s < 10
    from stitch_mcp.devices import cuda_ahead_device

    if cuda_ahead_device() is not None:  # one GPU: the spare rooms made their CUDA context before the check
        assert r.stage_seconds["room_cuda"] < 0.05, r.stage_seconds


def test_changed_kernel_builds_in_a_cache_scope_of_its_own(honest):
    """A changed candidate builds in its own room and its objects land in its own source's cache
    scope: nothing the first candidate's build left (which ran that candidate's code) is reused."""
    from stitch_mcp.check import candidate_scope

    _, cold_s = honest
    first = candidate_scope(get_settings().build_dir, HONEST)
    before = {p: p.stat().st_mtime_ns for p in first.rglob("*.so")}
    t0 = time.monotonic()
    r = check("gpu_cand_relu_v2", timing=True)
    changed_s = time.monotonic() - t0
    assert r.verdict == "pass", r.summary
    assert not r.build.cached
    own = candidate_scope(get_settings().build_dir, (PROGRAMS / "gpu_cand_relu_v2.py").read_text())
    assert own != first and list(own.rglob("*.so"))
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*.so")} == before
    print(f"\nchanged-kernel check {changed_s:.1f} s (cold {cold_s:.1f} s): build {r.stage_seconds.get('build')} s")


def test_private_stream_is_caught(honest):
    r = check("gpu_cand_private_stream", timing=True)
    found = {f.code for f in r.integrity.findings}
    # its output copied on the current stream is unfinished (a fail), or its time is the judge's
    assert r.verdict == "fail" or "timing_contradicted" in found, (r.summary, found)
    print(f"\nprivate stream: {sorted(codes(r))}")


def test_unwritten_output_is_caught(honest):
    r = check("gpu_cand_empty")
    assert r.verdict == "fail", r.summary
    assert "unwritten_output" in codes(r), r.integrity.findings


def test_illegal_memory_access_is_classified(honest):
    r = check("gpu_cand_oob")
    assert r.verdict == "error" and r.error_kind in ("illegal_memory_access", "launch_failure"), r.summary


def test_cuda_oom_is_classified(honest):
    r = check("gpu_cand_oom")
    assert r.verdict == "error" and r.error_kind == "cuda_oom", r.summary


def test_hung_kernel_times_out(honest):
    configure(run_timeout_s=45)
    try:
        t0 = time.monotonic()
        r = check("gpu_cand_hang")
    finally:
        configure()
    assert r.verdict == "error" and r.error_kind == "timeout", r.summary
    assert time.monotonic() - t0 < 90


def test_kernel_file_needing_the_real_header_climbs_and_passes():
    """A kernel file calling torch::get_num_threads() fails against ATen's per-operator headers and
    torch/types.h; it is rebuilt with torch/extension.h under the same module name, and runs."""
    r = check("cand_cuda_full_header")
    assert r.verdict == "pass", r.summary
    assert r.build.extensions[0].kernel_header == "torch/extension.h"


def test_a_judges_baselines_are_dropped_when_another_check_of_the_task_ran_beside_it():
    """A check alone on its task compiles and times torch.compile's baseline in its judge; another
    check of the task starting during its run stage (here a stand-in that enters and leaves) could
    have slowed that timing down, so torch.compile's time comes from the baseline worker instead."""
    from stitch_mcp import check as check_mod
    from stitch_mcp.jobs import Progress
    from stitch_mcp.sources import resolve_task

    reference = Path(REF).read_text() + f"\n# a task of its own: {uuid.uuid4().hex}\n"
    task = resolve_task(reference, None)

    class OtherCheckDuringRun(Progress):
        entered = False

        def update(self, done, total=None, message=""):
            super().update(done, total, message)
            if message.startswith("running correctness") and not self.entered:
                self.entered = True
                check_mod._task_activity.enter(task.task_id).leave_after([])

    progress = OtherCheckDuringRun()
    r = compile_and_check(reference=reference, candidate=HONEST, timing=True, compare_compile=True,
                          progress=progress)
    assert progress.entered and r.verdict == "pass", r.summary
    assert "compile_ahead" in r.stage_seconds  # its judge compiled and timed it ...
    assert r.timing.baselines_cached and r.timing.compiled, r.timing.compile_note  # ... the worker's is used
