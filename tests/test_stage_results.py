"""The stage results are typed at both ends of the worker's pipe (stitch_mcp.stage_results): a key
one side writes and the other does not know, or a value of the wrong type, is rejected as an
`internal` error naming it, and what the real judge sends validates."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitch_mcp import worker
from stitch_mcp.config import get_settings
from stitch_mcp.outcomes import WorkerResult
from stitch_mcp.stage_results import BaselineStageResult, RunStageResult

PROGRAMS = Path(__file__).resolve().parent / "programs"

A_TRIAL = {"trial": 0, "seed": 42, "inputs": "task", "weights": "task", "ok": True, "max_abs_err": 0.0,
           "problems": [], "near_zero": False}


def received(stage: str, data: dict) -> WorkerResult:
    """`data` as the server reads it off the pipe, classified as run_worker does once the worker exited."""
    res = WorkerResult(stage="timing")
    worker._record_event({"event": "result", "data": data}, res, stage)
    worker._classify(res, "", 0, 60, worker.FLOOD_BYTES)
    return res


@pytest.mark.parametrize("drift, named", [
    ({"trials": [A_TRIAL], "verdict": "pass"}, "verdict"),  # a key the server does not know
    ({"trials": [{**A_TRIAL, "speedup": 9.9}]}, "speedup"),  # one inside a trial
    ({"trials": [A_TRIAL], "checks_run": "all"}, "checks_run"),  # the wrong type
    ({"trials": [{**A_TRIAL, "ok": "maybe"}]}, "ok"),
    ({"error": {"kind": "runtime_error", "msg": "forward raised"}}, "msg"),  # the error payload too
])
def test_a_run_result_that_drifted_is_rejected_on_receipt(drift, named):
    res = received("run", drift)
    assert isinstance(res.result, RunStageResult) and res.result.trials == []  # nothing of it is read
    assert res.status == "error" and res.kind == "internal", (res.status, res.kind)
    assert "does not match its model" in res.message and named in res.message, res.message


def test_a_baseline_result_that_drifted_is_rejected_on_receipt():
    eager = {"median_ms": 1.0, "iqr_ms": 0.1, "cv": 0.01, "min_ms": 0.9, "calls": 10, "host_median_ms": 1.1}
    good = received("baseline", {"device": "cpu", "timing": {"eager": eager, "compiled": None, "compile_note": "",
                                                             "baselines_cached": False}})
    assert good.ok and isinstance(good.result, BaselineStageResult) and good.result.timing.eager.median_ms == 1.0
    bad = received("baseline", {"device": "cpu", "timing": {"eager": {**eager, "p99_ms": 3.0}}})
    assert bad.kind == "internal" and "p99_ms" in bad.message


def test_the_worker_sends_a_result_that_drifted_as_an_internal_error():
    sent = worker._checked_result("run", {"trials": [A_TRIAL], "findings": [], "stage_seconds": {"load": 0.5},
                                          "timing_ms": 3.0})
    assert set(sent) == {"error"} and sent["error"]["kind"] == "internal" and "timing_ms" in sent["error"]["message"]
    ok = {"trials": [A_TRIAL], "findings": [{"code": "input_mutation", "message": "m", "severity": "error",
                                            "confidence": "certain"}], "stage_seconds": {"load": 0.5}}
    assert worker._checked_result("run", ok) == ok  # sent as it was written
    assert worker._checked_result("selftest", {"anything": object}) == {"anything": object}  # untyped on purpose


def judge_on_the_cpu(workdir: Path, candidate: str, *, timing: bool, baselines: dict | None = None) -> RunStageResult:
    """A real run stage on the CPU; the result line it sent, validated here as it was sent."""
    from stitch_mcp.check import _limits, run_spec

    settings = get_settings()
    reference, source = ((PROGRAMS / f"{n}.py").read_text() for n in ("ref_relu", candidate))
    spec = run_spec(reference, source, Path(settings.build_dir).expanduser(), settings, trials=5, timing=timing,
                    compare_compile=timing, baselines=baselines, limits=_limits(settings.run_timeout_s, False))
    sent = []
    res = worker.run_worker("run", spec, workdir=workdir, timeout_s=settings.run_timeout_s,
                            on_event=lambda ev: sent.append(ev["data"]) if ev.get("event") == "result" else None)
    assert res.ok, (res.kind, res.message, res.output[-2000:])
    assert len(sent) == 1
    result = RunStageResult.model_validate(sent[0])  # raises on drift
    assert result == res.result and result.error is None
    assert result.room is not None and result.checks_run and len(result.trials) == 5
    return result


def test_what_the_real_judge_sends_validates(tmp_path):
    """A passing candidate, timed with torch.compile's baselines, and a failing one with its trials'
    noise and inputs: every key the judge writes is one the server knows."""
    passed = judge_on_the_cpu(tmp_path / "pass", "cand_relu_torch", timing=True)
    assert all(t.ok for t in passed.trials) and passed.timing.candidate.median_ms > 0 and passed.timing.bracket
    assert passed.timing.clean_baselines is not None and not passed.timing.baselines_cached
    failed = judge_on_the_cpu(tmp_path / "fail", "cand_wrong", timing=False)
    assert not any(t.ok for t in failed.trials) and failed.timing is None
    assert failed.trials[0].noise is not None and failed.trials[0].input_summary


def test_stored_baselines_of_an_earlier_version_reach_the_judge_as_it_types_them(tmp_path):
    """The task's cached baselines go back to the judge, which copies torch.compile's into its
    result: fields the store kept from an earlier version are left out on the way, not sent on."""
    from stitch_mcp.check import _cached_baselines, _clock
    from stitch_mcp.store import get_workspace

    ws, iters = get_workspace(), get_settings().timing_iters
    times = {"median_ms": 2.0, "iqr_ms": 0.1, "cv": 0.01, "min_ms": 1.9, "calls": 10, "method": "host perf_counter"}
    ws.add_report("baseline", {"devices": {"cpu": {"eager": times, "compiled": times, "compile_note": "torch.compile",
                                                   "timing_iters": iters, "clock": _clock("cpu"),  # this host's
                                                   "measured_at": 0.0}}}, task_id="t-typed")
    cached = _cached_baselines(ws, "t-typed", iters)
    assert "method" not in cached["cpu"]["compiled"] and cached["cpu"]["compiled"]["median_ms"] == 2.0
    result = judge_on_the_cpu(tmp_path / "cached", "cand_relu_torch", timing=True, baselines=cached)
    assert result.timing.baselines_cached and result.timing.compiled.median_ms == 2.0


def test_the_judges_timing_on_a_gpu_validates():
    """What only a GPU run writes (CUDA-event timing, calls too short for the bracket timed in
    batches, a contradicted time, eager timed alone and lower), made by the judge's own code from
    made-up times; the check's report says which eager time it used."""
    from types import SimpleNamespace

    from stitch_mcp.check import _fill_timing
    from stitch_mcp.judge.timing import Batches, EagerLanes, Lane, Timed, baselines, judge_times
    from stitch_mcp.models import CheckReport

    def lane(room_ms: float, wall_ms: float) -> Lane:
        return Lane(room_ms=[room_ms] * 20, wall_ms=[wall_ms + 0.001 * i for i in range(20)],
                    after_ms=[0.01] * 20, block_medians=[room_ms] * 4)

    res = {"trials": [A_TRIAL], "findings": [], "checks_run": []}
    timed = Timed(reference=lane(0.05, 0.09), candidate=lane(0.001, 0.09), out_bytes=4096, in_bytes=4096)
    judge_times(res, SimpleNamespace(device="cuda"), timed, Batches(calls=256, candidate_ms=0.05,
                                                                    reference_ms=0.06, copy_ms=0.01,
                                                                    candidate_whole_ms=0.051,
                                                                    reference_whole_ms=0.061,
                                                                    alone=EagerLanes(0.058, 0.01, 0.059),
                                                                    speedup_beside=1.0))
    baselines({}, res, SimpleNamespace(device="cuda"), None, lane(0.045, 0.08))
    res["timing"].update(floor_ms=0.001, floor_bound="memory", floor_note="memory-bound: 8 KiB at 3.35 TB/s",
                         floor_bytes=8192)  # ceilings.timing_floors's fields
    result = RunStageResult.model_validate(res)
    assert result.timing.batch is not None and result.timing.batch.speedup and result.timing.batch.reference_alone_ms
    assert {f.code for f in result.findings} == {"timing_contradicted"}
    report = CheckReport()
    _fill_timing(report, result.timing, "cuda")
    assert report.timing.eager.median_ms == pytest.approx(0.045) and "alone" in report.timing.eager_note
