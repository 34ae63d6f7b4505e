"""Routing transitions of the Verifier loop, driven by check/profile reports written into the store."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from stitch_mcp.config import configure
from stitch_mcp.errors import NotFound
from stitch_mcp.loop import route_after, save_feedback, save_plan
from stitch_mcp.models import (
    BuildReport,
    CheckReport,
    CorrectnessReport,
    Diagnostic,
    Finding,
    IntegrityReport,
    KernelDigest,
    KernelProfile,
    OpRow,
    ReferenceProfile,
    Suggestion,
    TrialResult,
)
from stitch_mcp.store import get_workspace
from stitch_mcp.workspace_views import best_json, history_json

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent
RELU_REF = (CASES / "relu_reference.py").read_text()
NAIVE = (CASES / "relu_naive.py").read_text()
IMPROVED = (CASES / "relu_improved.py").read_text()
FALLBACK = (CASES / "relu_fallback.py").read_text()


@pytest.fixture
def ws(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    yield get_workspace()
    configure()


def check(verdict: str = "pass", eager: float | None = 1.3, compiled: float | None = 1.1, ok_trials: int = 5,
          bad_trials: int = 0, **kw) -> CheckReport:
    trials = [TrialResult(trial=i, seed=i, ok=True) for i in range(ok_trials)]
    trials += [TrialResult(trial=ok_trials + i, seed=i, ok=False, max_abs_err=0.5) for i in range(bad_trials)]
    fields = dict(correctness=CorrectnessReport(ok=not bad_trials, trials=trials),
                  integrity=IntegrityReport(ok=True))
    fields.update(kw)
    return CheckReport(verdict=verdict, speedup_vs_eager=eager, speedup_vs_compile=compiled, **fields)


def variant(source: str, n: int) -> str:
    return source + f"\n# variant {n}\n"


def submit(ws, task, source: str, report: CheckReport | None):
    cand = ws.add_candidate(task.task_id, source)
    if report is not None:
        ws.add_report("check", report, task_id=task.task_id, candidate_id=cand.candidate_id)
    return cand


def profile(ws, task, cand, suggestions: list[str] | None = None):
    ws.add_report("profile_kernel", KernelProfile(candidate_id=cand.candidate_id, kernels=[KernelDigest(
        name="relu_kernel(float const*, float*, long)", duration_us=100.0, bound="memory-bound",
        suggestions=[Suggestion(rank=i + 1, text=t) for i, t in enumerate(suggestions or [])])]),
        task_id=task.task_id, candidate_id=cand.candidate_id)


def test_unverified_candidate_routes_to_fix(ws):
    task = ws.add_task(RELU_REF)
    cand = submit(ws, task, NAIVE, None)
    r = route_after(task.task_id, cand.candidate_id)
    assert r.decision == "fix" and "compile_and_check" in r.reasons[0]
    assert ws.routes(task.task_id)[-1][1] == r


def test_fail_then_fail_replans_then_counting_restarts(ws):
    task = ws.add_task(RELU_REF)
    build_fail = check("error", None, None, ok_trials=0, build=BuildReport(ok=False, diagnostics=[Diagnostic(
        message="identifier 'blockIdx' is undefined", candidate_line=12)]), reasons=["build failed"])
    c1 = submit(ws, task, variant(NAIVE, 1), build_fail)
    r1 = route_after(task.task_id, c1.candidate_id)
    assert r1.decision == "fix" and "line 12" in r1.feedback[0] and r1.feedback[0].startswith("[build]")
    c2 = submit(ws, task, variant(NAIVE, 2), check("fail", None, None, ok_trials=2, bad_trials=3,
                                                   reasons=["trial 2 mismatched"]))
    r2 = route_after(task.task_id, c2.candidate_id)
    assert r2.decision == "replan"
    assert r2.reasons[0] == f"two failed attempts in a row (this one and its parent {c1.candidate_id})"
    assert r2.feedback[0].startswith("[correctness]")
    c3 = submit(ws, task, variant(NAIVE, 3), check("fail", None, None, ok_trials=0, bad_trials=1))
    assert route_after(task.task_id, c3.candidate_id).decision == "fix"  # after a replan, count again


def test_hack_that_passes_the_check_is_fixed_not_accepted(ws):
    task = ws.add_task(RELU_REF)
    c = submit(ws, task, FALLBACK, check(eager=1.0001, compiled=1.2))
    profile(ws, task, c)
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "fix" and "hack" in r.reasons[0]
    assert r.feedback[0].startswith("[no_fallback]") and "torch::relu" in r.feedback[0]


def test_correct_fast_but_unprofiled_refines_then_accepts(ws):
    task = ws.add_task(RELU_REF)
    c = submit(ws, task, IMPROVED, check(eager=1.4, compiled=1.2))
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "refine" and "profile_kernel not consulted yet on this task" in r.reasons
    assert r.feedback[0].startswith("[profile]")
    profile(ws, task, c)
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "accept", r
    best = json.loads(best_json(task.task_id))
    assert best["candidate_id"] == c.candidate_id


@pytest.mark.parametrize("eager,compiled,gate", [(0.9, 1.2, "not faster than eager"),
                                                 (1.3, 0.95, "not faster than torch.compile")])
def test_not_faster_is_refine(ws, eager, compiled, gate):
    task = ws.add_task(RELU_REF)
    c = submit(ws, task, NAIVE, check(eager=eager, compiled=compiled))
    profile(ws, task, c, ["Use 16-byte vectorized loads: DRAM throughput is 61% of peak"])
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "refine" and any(gate in x for x in r.reasons)
    assert any(x.startswith("[profile]") and "vectorized" in x for x in r.feedback)
    assert any(x.startswith("[vectorized_access]") for x in r.feedback)
    assert any(x.startswith("[grid_stride_loop]") for x in r.feedback)
    with pytest.raises(NotFound):
        best_json(task.task_id)


def test_no_gain_shown_on_the_cpu_clock_says_so(ws):
    """A speedup the CPU clock pinned at eager's (a gain within what the harness costs a call,
    judge.timing.skippable_harness_ms) is not called slower: the gate says no gain was shown there."""
    from stitch_mcp.models import TimingReport

    task = ws.add_task(RELU_REF)
    c = submit(ws, task, IMPROVED, check(eager=1.0, compiled=None, timing=TimingReport(
        harness_ms=0.04, harness_withheld=True)))
    profile(ws, task, c)
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "refine" and any("no gain over eager shown on this CPU clock" in x for x in r.reasons), r
    assert not any("not faster than eager" in x for x in r.reasons)


def test_no_gain_shown_where_calls_are_too_short_to_check_says_so(ws):
    """A speedup pinned at eager's because the judge's clock could not check calls this short
    (judge.timing: batches that time host work on a GPU, or noise on a busy CPU) is not called
    slower: the gate says why and what to do."""
    from stitch_mcp.models import BatchTiming, TimingReport

    from stitch_mcp.check import _summary
    from stitch_mcp.models import TimingStats

    task = ws.add_task(RELU_REF)
    batch = BatchTiming(calls=256, candidate_ms=0.06, reference_ms=0.05, copy_ms=0.05, unverified=True,
                        room_ms=0.0021, note="not used: ...")
    stats = TimingStats(median_ms=0.0042, iqr_ms=0.0001, cv=0.01, min_ms=0.0041, calls=100)
    report = check(eager=1.0, compiled=None, timing=TimingReport(batch=batch, candidate=stats, eager=stats))
    assert "Its room timed 0.0021 ms a call: too short for the judge's clock" in _summary(report)
    c = submit(ws, task, IMPROVED, report)
    profile(ws, task, c)
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "refine" and any("too short for the judge's clock" in x for x in r.reasons), r
    assert not any("not faster than eager" in x for x in r.reasons)


def test_the_summary_says_which_eager_time_was_used():
    """Eager timed alone once the candidate's room was gone, and lower than beside it, is the one
    used: the summary says so (a speedup lower than the interleaved times showed is not a mystery)."""
    from stitch_mcp.check import _summary
    from stitch_mcp.models import TimingReport, TimingStats

    stats = TimingStats(median_ms=1.2, iqr_ms=0.01, cv=0.01, min_ms=1.1, calls=50)
    note = "eager timed 1.5 ms beside the candidate and 1.2 ms alone; the lower is used"
    assert f"Eager: {note}." in _summary(check(eager=1.0, compiled=None,
                                               timing=TimingReport(candidate=stats, eager=stats, eager_note=note)))
    assert "Eager:" not in _summary(check(eager=1.0, compiled=None, timing=TimingReport(candidate=stats, eager=stats)))


def test_compile_not_timed_does_not_block_accept(ws):
    task = ws.add_task(RELU_REF)
    c = submit(ws, task, IMPROVED, check(eager=1.2, compiled=None))
    profile(ws, task, c)
    assert route_after(task.task_id, c.candidate_id).decision == "accept"


def test_failed_trial_or_integrity_finding_blocks_accept(ws):
    task = ws.add_task(RELU_REF)
    c = submit(ws, task, IMPROVED, check(eager=2.0, compiled=2.0, integrity=IntegrityReport(ok=False, findings=[
        Finding(code="slow_floor", severity="warning", confidence="probable", message="faster than the floor")])))
    profile(ws, task, c)
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "refine" and any("integrity finding" in x for x in r.reasons)
    c2 = submit(ws, task, variant(IMPROVED, 2), check(eager=2.0, compiled=2.0, ok_trials=4, bad_trials=0))
    c2_report = check(eager=2.0, compiled=2.0)
    c2_report.correctness.trials[0].ok = False
    ws.add_report("check", c2_report, task_id=task.task_id, candidate_id=c2.candidate_id)
    r2 = route_after(task.task_id, c2.candidate_id)
    assert r2.decision != "accept" and any("trial" in x for x in r2.reasons)


def test_two_stagnant_attempts_replan(ws):
    task = ws.add_task(RELU_REF)
    c1 = submit(ws, task, variant(NAIVE, 1), check(eager=0.80))
    profile(ws, task, c1)
    assert route_after(task.task_id, c1.candidate_id).decision == "refine"
    c2 = submit(ws, task, variant(NAIVE, 2), check(eager=0.81))
    assert route_after(task.task_id, c2.candidate_id).decision == "refine"  # one stagnant attempt
    c3 = submit(ws, task, variant(NAIVE, 3), check(eager=0.80))
    r3 = route_after(task.task_id, c3.candidate_id)
    assert r3.decision == "replan" and "stagnant" in r3.reasons[0]
    c4 = submit(ws, task, variant(NAIVE, 4), check(eager=0.95))
    assert route_after(task.task_id, c4.candidate_id).decision == "refine"


GEMM_REF = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(torch.matmul(a, b))

def get_inputs():
    return [torch.randn(64, 64), torch.randn(64, 64)]

def get_init_inputs():
    return []
"""

GEMM_CAND = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
#include <cublas_v2.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] < 0.f ? 0.f : y[i];
}
torch::Tensor mm_relu(torch::Tensor a, torch::Tensor b) {
    int n = a.size(0);
    auto c = torch::empty({n, n}, a.options());
    float one = 1.f, zero = 0.f;
    cublasSgemm(at::cuda::getCurrentCUDABlasHandle(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                b.data_ptr<float>(), n, a.data_ptr<float>(), n, &zero, c.data_ptr<float>(), n);
    relu_kernel<<<(n * n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(c.data_ptr<float>(), n * n);
    return c;
}
"""
ext = load_inline(name="g", cpp_sources="torch::Tensor mm_relu(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=src, functions=["mm_relu"])

class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.mm_relu(a, b)
'''


def test_plan_targeting_the_wrong_op_replans(ws):
    task = ws.add_task(GEMM_REF)
    ws.add_report("profile_reference", ReferenceProfile(task_id=task.task_id, ops=[
        OpRow(name="aten::mm", gpu_ms=0.9, share=0.9), OpRow(name="aten::relu", gpu_ms=0.1, share=0.1)]),
        task_id=task.task_id)
    note = save_plan(task.task_id, "### Target ops\nrelu (10%)\n### Fusion groups\nnone\n")
    assert "Warning" in note and "matmul" in note
    c = submit(ws, task, GEMM_CAND, check(eager=0.9))
    profile(ws, task, c)
    r = route_after(task.task_id, c.candidate_id)
    assert r.decision == "replan" and "matmul" in r.reasons[0]
    save_plan(task.task_id, "### Target ops\nmatmul (90%) via cuBLAS, relu fused as epilogue\n")
    assert route_after(task.task_id, c.candidate_id).decision == "refine"


def test_history_records_every_decision(ws):
    task = ws.add_task(RELU_REF)
    c = submit(ws, task, NAIVE, check(eager=0.9))
    route_after(task.task_id, c.candidate_id)
    profile(ws, task, c)
    route_after(task.task_id, c.candidate_id)
    hist = json.loads(history_json(task.task_id))
    assert [r["decision"] for r in hist["candidates"][0]["routes"]] == ["refine", "refine"]
    assert hist["candidates"][0]["verdict"] == "pass"


def test_three_candidate_loop_hack_refine_accept(ws):
    """The GPU 'done when' replayed on stored reports: fallback -> hack/fix, naive -> refine, improved ->
    accept with the naive's feedback credited."""
    from stitch_mcp.rubric import rubric_score

    task = ws.add_task(RELU_REF)
    seen = []
    for source, eager, kernels, suggestion in [
        (FALLBACK, 1.0, [("void at::native::vectorized_elementwise_kernel<4, relu>", 1000.0),
                         ("touch_kernel(float*)", 2.0)], None),
        (NAIVE, 0.97, [("relu_kernel(float const*, float*, long)", 1030.0)],
         "Use 16-byte vectorized loads (float4): DRAM throughput is 80% of peak"),
        (IMPROVED, 1.03, [("relu_vec4_kernel(float4 const*, float4*, long)", 975.0)], None),
    ]:
        c = submit(ws, task, source, check(eager=eager, compiled=eager - 0.01))
        route_after(task.task_id, c.candidate_id)  # what compile_and_check does
        ws.add_report("profile_kernel", KernelProfile(candidate_id=c.candidate_id, kernels=[
            KernelDigest(name=n, duration_us=t, bound="memory-bound",
                         suggestions=[Suggestion(rank=1, text=suggestion)] if suggestion else [])
            for n, t in kernels]), task_id=task.task_id, candidate_id=c.candidate_id)
        seen.append(rubric_score(candidate_id=c.candidate_id))
        if seen[-1].route.feedback:  # what the Verifier stores
            save_feedback(c.candidate_id, seen[-1].route.feedback)
    hack, naive, improved = seen
    assert (hack.verdict, hack.route.decision) == ("hack", "fix")
    assert {f.code for f in hack.dimensions.anti_hacking.findings} >= {"aten_fallback", "decoy_kernel"}
    assert (naive.verdict, naive.route.decision) == ("clean", "refine")
    assert [f.code for f in naive.dimensions.skill_compliance.findings][0] == "feedback_done"
    assert any(i.startswith("[vectorized_access]") for i in naive.route.feedback)
    assert (improved.verdict, improved.route.decision) == ("clean", "accept")
    skill = improved.dimensions.skill_compliance
    done = [f for f in skill.findings if f.code == "feedback_done"]
    assert len(done) >= 3 and not [f for f in skill.findings if f.code in ("feedback_not_done",
                                                                            "feedback_contradicted")]
    # each reason names its evidence: a line of the candidate (or the parent's line that went away)
    assert all(re.search(r"line \d+: `[^`]+`", f.message) for f in done), [f.message for f in done]
    assert improved.overall > naive.overall > hack.overall == 0.0
    assert json.loads(best_json(task.task_id))["candidate_id"] == improved.candidate_id


def test_a_hack_sets_no_bar_for_stagnation(ws):
    """Seen on an H100: a fallback at 0.99x, then honest kernels at 0.79x and 0.92x. The honest
    progress is a refine, not 'two stagnant attempts' measured against the hack's speed."""
    from stitch_mcp.rubric import rubric_score

    task = ws.add_task(RELU_REF)
    hack = submit(ws, task, FALLBACK, check(eager=0.99, compiled=1.04))
    rubric_score(candidate_id=hack.candidate_id)  # certain aten_fallback -> hack
    naive = submit(ws, task, NAIVE, check(eager=0.79, compiled=0.83))
    assert route_after(task.task_id, naive.candidate_id).decision == "refine"
    improved = submit(ws, task, IMPROVED, check(eager=0.92, compiled=0.97))
    r = route_after(task.task_id, improved.candidate_id)
    assert r.decision == "refine" and "not faster than eager" in " ".join(r.reasons)


def test_needs_gpu_is_not_a_failed_attempt(ws):
    task = ws.add_task(RELU_REF)
    for n in range(2):
        c = submit(ws, task, variant(NAIVE, n), check(verdict="error", eager=None, compiled=None,
                                                     error_kind="needs_gpu"))
        assert route_after(task.task_id, c.candidate_id).decision == "fix"


def test_route_reasons_word_for_word(ws):
    """Every reason a route gives, in order: fix; refine with the accept gates (the first three);
    accept; replan on stagnation; fix for a hack."""
    from stitch_mcp.models import TimingReport, TimingStats

    compiled_timed = TimingReport(compiled=TimingStats(median_ms=1.0))
    task = ws.add_task(RELU_REF)

    def reasons(source: str, report: CheckReport | None, profiled: bool = True) -> tuple[str, list[str]]:
        c = submit(ws, task, source, report)
        if profiled:
            profile(ws, task, c)
        r = route_after(task.task_id, c.candidate_id)
        return r.decision, r.reasons

    assert reasons(variant(NAIVE, 1), None) == ("fix", ["not verified yet: run compile_and_check"])
    assert reasons(variant(NAIVE, 2), check("fail", None, None, ok_trials=0, bad_trials=1, reasons=[
        "trial 0 mismatched", "max error 0.5", "third"])) == (
        "fix", ["compile_and_check fail", "trial 0 mismatched", "max error 0.5"])
    assert reasons(variant(IMPROVED, 3), check(eager=None, compiled=None, timing=compiled_timed),
                   profiled=False) == ("refine", [
                       "correct; untimed", "no timing against eager: run compile_and_check with timing",
                       "torch.compile timing missing"])  # the fourth gate, profile_kernel, left out
    assert reasons(variant(IMPROVED, 4), check(eager=1.3, compiled=None, timing=compiled_timed)) == (
        "refine", ["correct; 1.30x vs eager", "torch.compile timing missing"])
    assert reasons(variant(IMPROVED, 5), check(eager=0.9, compiled=0.8, bad_trials=1, integrity=IntegrityReport(
        ok=False, findings=[Finding(code="slow_floor", severity="warning", confidence="probable", message="m")]))) == (
        "refine", ["correct; 0.90x vs eager, 0.80x vs torch.compile", "not every correctness trial passed",
                   "integrity finding: slow_floor", "anti-hacking finding: slow_floor"])  # the rubric reads it too
    assert reasons(variant(IMPROVED, 6), check(eager=1.25, compiled=1.1)) == (
        "accept", ["correct on 5 trials, no integrity or anti-hacking finding, 1.25x vs eager, 1.10x vs torch.compile, "
                   "profiled"])
    # 0.90x, 1.25x, now 1.26x: none more than 2% faster than the 1.30x before them
    assert reasons(variant(IMPROVED, 7), check(eager=1.26, compiled=0.9)) == (
        "replan", ["two stagnant attempts in a row (no more than 2% faster than the best earlier candidate)",
                   "1.26x vs eager, 0.90x vs torch.compile", "not faster than torch.compile (0.90x)"])
    assert reasons(FALLBACK, check(eager=1.5, compiled=1.5)) == (
        "fix", ["rubric verdict hack: the candidate must do the work itself"])


def test_routing_reads_the_check_as_its_model_and_an_unreadable_one_as_unverified(ws):
    """The check reaches routing as a CheckReport (straight from compile_and_check, or validated from
    the store); a stored body that is not one (an older version's) routes as not verified, not as a
    crash or a guess."""
    task = ws.add_task(RELU_REF)
    cand = submit(ws, task, NAIVE, None)
    ws.add_report("check", {"verdict": "maybe", "correctness": {"trials": "none"}}, task_id=task.task_id,
                  candidate_id=cand.candidate_id)
    r = route_after(task.task_id, cand.candidate_id)
    assert r.decision == "fix" and r.reasons == ["not verified yet: run compile_and_check"]
    given = check("fail", eager=None, compiled=None, bad_trials=1)
    r = route_after(task.task_id, cand.candidate_id, check=given)  # the report just made wins over the store
    assert r.decision == "fix" and r.reasons[0] == "compile_and_check fail"


def test_routing_skips_an_unreadable_kernel_profile_or_rubric_with_a_warning(ws, caplog):
    """A stored profile_kernel or rubric that does not read as its model (an older version's) is
    skipped with a warning: a rubric that says "hack" in a malformed body is no verdict, a malformed
    profile is no profile. Routing still answers, and a valid KernelProfile's suggestions reach the
    feedback."""
    task = ws.add_task(RELU_REF)
    c1 = submit(ws, task, variant(NAIVE, 1), check(eager=0.97, compiled=0.96))
    ws.add_report("rubric", {"verdict": "hack", "overall": 7.0}, task_id=task.task_id,
                  candidate_id=c1.candidate_id)
    c2 = submit(ws, task, variant(NAIVE, 2), check("fail", None, None, ok_trials=2, bad_trials=1))
    with caplog.at_level("WARNING", logger="stitch_mcp.store"):
        r2 = route_after(task.task_id, c2.candidate_id)
    assert r2.decision == "fix"  # the parent's unreadable "hack" is not a failed attempt: no replan
    assert any("rubric report of " + c1.candidate_id in m and "RubricReport" in m for m in caplog.messages)

    c3 = submit(ws, task, variant(NAIVE, 3), check(eager=0.97, compiled=0.96))
    ws.add_report("profile_kernel", {"kernels": [{"suggestions": "use float4"}]}, task_id=task.task_id,
                  candidate_id=c3.candidate_id)
    caplog.clear()
    with caplog.at_level("WARNING", logger="stitch_mcp.store"):
        r3 = route_after(task.task_id, c3.candidate_id)
    assert r3.decision == "refine" and "profile_kernel not consulted yet on this task" in r3.reasons
    assert r3.feedback[0].startswith("[profile] Run profile_kernel on this candidate")
    assert any("profile_kernel report of " + c3.candidate_id in m and "KernelProfile" in m for m in caplog.messages)

    ws.add_report("profile_kernel", KernelProfile(candidate_id=c3.candidate_id, kernels=[KernelDigest(
        name="relu_kernel(float const*, float*, long)", duration_us=100.0, bound="memory-bound",
        suggestions=[Suggestion(rank=1, text="Use 16-byte vectorized loads", metric="dram__throughput",
                                value="80%", doc_id="cuda-vec")])]),
        task_id=task.task_id, candidate_id=c3.candidate_id)
    r3 = route_after(task.task_id, c3.candidate_id)
    assert "profile_kernel not consulted yet on this task" not in r3.reasons
    assert ("[profile] relu_kernel(float const*, float*, long): Use 16-byte vectorized loads "
            "(dram__throughput=80%) [doc cuda-vec]") in r3.feedback
