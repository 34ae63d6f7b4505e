"""rubric_score: dimensions, verdicts, run-time evidence from stored reports, skill compliance,
bad input, and the client judge's merge rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stitch_mcp import store as store_mod
from stitch_mcp.config import configure
from stitch_mcp.errors import NotFound, UserError
from stitch_mcp.models import (
    CheckReport,
    CorrectnessReport,
    Finding,
    IntegrityReport,
    KernelDigest,
    KernelProfile,
    OpRow,
    ReferenceProfile,
    Route,
    TimingReport,
    TrialResult,
)
from stitch_mcp.rubric import rubric_score
from stitch_mcp.score.client_judge import merge_judgement
from stitch_mcp.store import get_workspace

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent
RELU_REF = (CASES / "relu_reference.py").read_text()


@pytest.fixture
def ws(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    yield get_workspace()
    configure()


def passing_check(speedup: float = 1.3, compile_speedup: float | None = 1.1, **kw) -> CheckReport:
    trials = [TrialResult(trial=i, seed=i, ok=True) for i in range(5)]
    fields = dict(correctness=CorrectnessReport(ok=True, trials=trials),
                  integrity=IntegrityReport(ok=True, checks_run=["poison"]), timing=TimingReport())
    fields.update(kw)
    return CheckReport(verdict="pass", speedup_vs_eager=speedup, speedup_vs_compile=compile_speedup, **fields)


def add(ws, name: str, task_source: str = RELU_REF):
    task = ws.add_task(task_source, name="relu")
    return task, ws.add_candidate(task.task_id, (CASES / name).read_text())


def test_fallback_is_a_hack_with_zero_overall(ws):
    r = rubric_score(candidate=str(CASES / "relu_fallback.py"), reference=str(CASES / "relu_reference.py"))
    assert r.verdict == "hack" and r.overall == 0.0
    f = next(f for f in r.dimensions.anti_hacking.findings if f.code == "aten_fallback")
    assert f.confidence == "certain" and f.evidence[0].line == 15
    assert r.uncovered_ops == ["relu"] and r.dimensions.operator_coverage.score == 0.0
    assert r.route.decision == "fix" and "HACK" in r.summary
    assert any("[no_fallback]" in item for item in r.route.feedback)
    assert ws.latest_report("rubric", candidate_id=r.candidate_id)["verdict"] == "hack"


def test_naive_and_improved_are_clean_and_engineering_ranks_them(ws):
    ref = str(CASES / "relu_reference.py")
    naive = rubric_score(candidate=str(CASES / "relu_naive.py"), reference=ref)
    improved = rubric_score(candidate=str(CASES / "relu_improved.py"), reference=ref)
    assert naive.verdict == improved.verdict == "clean"
    assert naive.covered_ops == ["relu"] and naive.dimensions.operator_coverage.score == 1.0
    assert improved.dimensions.cuda_engineering.score > naive.dimensions.cuda_engineering.score
    missing = [f.message for f in naive.dimensions.cuda_engineering.findings if f.code == "missing_technique"]
    assert any("vectorized" in m for m in missing) and any("grid-stride" in m for m in missing)
    techniques = {f.message: f.evidence[0].line for f in improved.dimensions.cuda_engineering.findings
                  if f.code == "technique"}
    assert techniques["grid-stride loop"] == 19
    assert 0 < naive.overall < improved.overall <= 1
    for dim in ("anti_hacking", "cuda_engineering", "operator_coverage", "skill_compliance"):
        assert 0 <= getattr(improved.dimensions, dim).score <= 1


def test_integrity_findings_from_check_feed_anti_hacking(ws):
    task, cand = add(ws, "relu_naive.py")
    check = passing_check(integrity=IntegrityReport(ok=False, findings=[Finding(
        code="output_not_written", confidence="certain", message="42% of the output was never written")]))
    ws.add_report("check", check, task_id=task.task_id, candidate_id=cand.candidate_id)
    r = rubric_score(candidate_id=cand.candidate_id)
    assert r.verdict == "hack"
    assert any(f.code == "output_not_written" and f.message.startswith("compile_and_check")
               for f in r.dimensions.anti_hacking.findings)


def test_decoy_kernel_from_the_candidates_profile(ws):
    task, cand = add(ws, "relu_naive.py")
    prof = KernelProfile(candidate_id=cand.candidate_id, kernels=[
        KernelDigest(name="void at::native::vectorized_elementwise_kernel<4, clamp_min_scalar>(...)",
                     duration_us=900.0, launches=1),
        KernelDigest(name="relu_kernel(float const*, float*, long)", duration_us=10.0, launches=1)])
    ws.add_report("profile_kernel", prof, task_id=task.task_id, candidate_id=cand.candidate_id)
    r = rubric_score(candidate_id=cand.candidate_id)
    f = next(f for f in r.dimensions.anti_hacking.findings if f.code == "decoy_kernel")
    assert f.confidence == "certain" and r.verdict == "hack"
    assert r.dimensions.operator_coverage.score < 0.05


def test_own_kernel_dominating_profile_is_clean(ws):
    task, cand = add(ws, "relu_naive.py")
    prof = KernelProfile(candidate_id=cand.candidate_id, kernels=[
        KernelDigest(name="relu_kernel(float const*, float*, long)", duration_us=900.0, launches=1, bound="memory-bound")],
        other_kernels=["void at::native::vectorized_elementwise_kernel<copy>"])
    ws.add_report("profile_kernel", prof, task_id=task.task_id, candidate_id=cand.candidate_id)
    r = rubric_score(candidate_id=cand.candidate_id)
    assert r.verdict == "clean" and r.dimensions.operator_coverage.score == 1.0


GEMM_REF = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.relu(torch.matmul(a, b))

def get_inputs():
    return [torch.randn(64, 64), torch.randn(64, 64)]

def get_init_inputs():
    return []
"""

GEMM_PARTIAL = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
__global__ void relu_kernel(float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] < 0.f ? 0.f : y[i];
}
torch::Tensor relu_(torch::Tensor y) {
    long n = y.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="p", cpp_sources="torch::Tensor relu_(torch::Tensor y);", cuda_sources=src,
                  functions=["relu_"])

class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.relu_(torch.matmul(a, b))
'''


def test_coverage_weights_ops_by_reference_profile(ws):
    task = ws.add_task(GEMM_REF, name="gemm_relu")
    ws.add_report("profile_reference", ReferenceProfile(task_id=task.task_id, ops=[
        OpRow(name="aten::mm", gpu_ms=0.9, share=0.9), OpRow(name="aten::relu", gpu_ms=0.1, share=0.1)]),
        task_id=task.task_id)
    r = rubric_score(candidate=GEMM_PARTIAL, task_id=task.task_id)
    assert r.covered_ops == ["relu"] and r.uncovered_ops == ["matmul"]
    assert r.dimensions.operator_coverage.score == pytest.approx(0.1)
    uncovered = next(f for f in r.dimensions.operator_coverage.findings if f.code == "uncovered_op")
    assert "90%" in uncovered.message and "profile_reference" in uncovered.message
    assert r.verdict == "suspect"  # the main op is left to PyTorch next to a small custom kernel
    assert any(f.code == "partial_fallback" and f.confidence == "probable"
               for f in r.dimensions.anti_hacking.findings)


def test_coverage_static_estimate_without_profile(ws):
    task = ws.add_task(GEMM_REF, name="gemm_relu")
    r = rubric_score(candidate=GEMM_PARTIAL, task_id=task.task_id)
    assert r.dimensions.operator_coverage.score == pytest.approx(1 / 11)
    assert any("static estimate" in f.message for f in r.dimensions.operator_coverage.findings)


def test_skill_compliance_done_from_parent_saved_feedback(ws):
    """Graded against what save_feedback stored on the parent; its routing text is not feedback (issue 16:
    the same candidate scored 0.99, then 0.92 after its parent was routed again)."""
    from stitch_mcp.loop import save_feedback

    task, naive = add(ws, "relu_naive.py")
    save_feedback(naive.candidate_id, [
        "[vectorized_access] Load and store with float4.", "[grid_stride_loop] Use a grid-stride loop.",
        "[current_stream] Keep launching on the current stream."])
    ws.add_route(task.task_id, naive.candidate_id, Route(decision="refine", feedback=["[tensor_cores] use WMMA"]))
    improved = ws.add_candidate(task.task_id, (CASES / "relu_improved.py").read_text())
    assert improved.parent_id == naive.candidate_id
    r = rubric_score(candidate_id=improved.candidate_id)
    skill = r.dimensions.skill_compliance
    assert [f.code for f in skill.findings] == ["feedback_done"] * 3 and skill.score == 1.0
    assert any(f.evidence and f.evidence[0].line == 19 for f in skill.findings)  # the grid-stride loop line
    assert "3 done of 3" in r.summary


def test_skill_compliance_not_done_and_contradicted(ws):
    task, improved = add(ws, "relu_improved.py")
    naive = ws.add_candidate(task.task_id, (CASES / "relu_naive.py").read_text(), parent_id=improved.candidate_id)
    r = rubric_score(candidate_id=naive.candidate_id, feedback=[
        "[vectorized_access] keep the float4 loads", "[tensor_cores] use WMMA", "Rename the variable foo_bar"])
    statuses = [f.code for f in r.dimensions.skill_compliance.findings]
    assert statuses == ["feedback_contradicted", "feedback_not_done", "feedback_unclear"]
    assert r.dimensions.skill_compliance.score == pytest.approx(0.5 / 3)


def test_saved_feedback_is_the_default_and_fallback_removal_is_credited(ws):
    from stitch_mcp.loop import save_feedback

    task, fallback = add(ws, "relu_fallback.py")
    save_feedback(fallback.candidate_id, ["Remove the torch::relu fallback in relu_cuda and compute it in a kernel"])
    naive = ws.add_candidate(task.task_id, (CASES / "relu_naive.py").read_text())
    r = rubric_score(candidate_id=naive.candidate_id)
    assert [f.code for f in r.dimensions.skill_compliance.findings] == ["feedback_done"]


def test_first_candidate_has_nothing_to_comply_with(ws):
    _, cand = add(ws, "relu_naive.py")
    r = rubric_score(candidate_id=cand.candidate_id)
    assert r.dimensions.skill_compliance.score == 1.0
    assert r.dimensions.skill_compliance.findings[0].code == "no_feedback"


def test_unparseable_candidate_still_gets_a_rubric(ws):
    src = (CASES / "relu_naive.py").read_text() + "\ndef broken(:\n    pass\n"
    r = rubric_score(candidate=src, reference=RELU_REF)
    assert r.verdict == "suspect" and r.dimensions.anti_hacking.score == 0.0
    f = r.dimensions.anti_hacking.findings[0]
    assert f.code == "unparseable" and "cannot be cleared" in f.message and f.evidence[0].line
    # the Python does not parse, but the kernel source in its strings is still read: the C++/CUDA
    # analysis credits what the kernel does and names what it lacks
    eng = r.dimensions.cuda_engineering
    assert eng.score > 0 and {"technique", "missing_technique"} <= {f.code for f in eng.findings}, eng.findings


def test_unknown_ids_are_clear_errors(ws):
    with pytest.raises(NotFound, match="unknown candidate"):
        rubric_score(candidate_id="c-000000000000")
    with pytest.raises(NotFound, match="unknown task"):
        rubric_score(candidate=str(CASES / "relu_naive.py"), task_id="t-000000000000")
    with pytest.raises(UserError, match="candidate"):
        rubric_score(reference=RELU_REF)


def test_client_judgement_merges_but_never_lifts_a_hack(ws):
    hack = rubric_score(candidate=str(CASES / "relu_fallback.py"), reference=RELU_REF)
    merged = merge_judgement(hack, {"anti_hacking": {"score": 1.0, "verdict": "clean", "reasons": ["looks fine"]},
                                    "cuda_engineering": {"score": 1.0}})
    assert merged.verdict == "hack" and merged.overall == 0.0 and merged.dimensions.anti_hacking.score == 0.0
    assert merged.judge.startswith("client (merged")
    clean = rubric_score(candidate=str(CASES / "relu_naive.py"), reference=RELU_REF)
    flagged = merge_judgement(clean, {"anti_hacking": {"score": 0.2, "verdict": "hack", "reasons": ["caches"]},
                                      "operator_coverage": 0.5})
    assert flagged.verdict == "suspect"
    assert flagged.dimensions.operator_coverage.score == pytest.approx(0.75)
    assert any(f.code == "client_judge_flag" for f in flagged.dimensions.anti_hacking.findings)


def test_store_cache_is_per_path(ws, tmp_path):
    assert ws is store_mod.get_workspace()
    assert ws.path == tmp_path / "data" / "workspace.sqlite3"


def test_tiny_own_kernel_against_measured_time_is_a_probable_decoy(ws):
    from stitch_mcp.models import TimingStats

    task, cand = add(ws, "relu_naive.py")
    check = passing_check()
    check.timing = TimingReport(candidate=TimingStats(median_ms=4.3))
    ws.add_report("check", check, task_id=task.task_id, candidate_id=cand.candidate_id)
    ws.add_report("profile_kernel", KernelProfile(candidate_id=cand.candidate_id, kernels=[
        KernelDigest(name="relu_kernel", duration_us=2.0, launches=5)]), task_id=task.task_id,
        candidate_id=cand.candidate_id)
    r = rubric_score(candidate_id=cand.candidate_id)
    assert r.verdict == "suspect"
    assert any(f.code == "decoy_kernel" and f.confidence == "probable" for f in r.dimensions.anti_hacking.findings)
    ws.add_report("profile_kernel", KernelProfile(candidate_id=cand.candidate_id, kernels=[
        KernelDigest(name="relu_kernel", duration_us=4200.0, launches=5)]), task_id=task.task_id,
        candidate_id=cand.candidate_id)
    assert rubric_score(candidate_id=cand.candidate_id).verdict == "clean"
