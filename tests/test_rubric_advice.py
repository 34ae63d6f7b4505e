"""Advice that fits the target and the rules: C++ for the CPU graded on CPU techniques, planner and
verifier prompts in the target's words (and the verifier's short, pointing at the candidate), and
tensor-core advice on fp32 tasks that stays within the rules (3xTF32, not plain TF32)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from stitch_mcp import examples
from stitch_mcp.config import configure
from stitch_mcp.models import KernelDigest, KernelProfile, OpRow, ReferenceProfile, Suggestion
from stitch_mcp.prompts import render_planner, render_verifier
from stitch_mcp.score import rubric_score
from stitch_mcp.store import get_workspace

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent
GPU_WORDS = re.compile(r"float4|grid-stride|blocks per SM|__shfl|warp|tensor cores|cp\.async|GPU ms", re.I)


@pytest.fixture
def ws(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    for name in ("reference.py", "cpu_naive.py", "cpu_fused.py", "cuda_naive.py", "cuda_fused.py"):
        (tmp_path / name).write_text(examples.read(name))
    yield tmp_path
    configure()


def _messages(report) -> list[str]:
    d = report.dimensions
    return [f.message for dim in (d.anti_hacking, d.cuda_engineering, d.operator_coverage) for f in dim.findings]


def test_cpu_candidates_are_graded_on_cpu_techniques(ws):
    ref = str(ws / "reference.py")
    naive = rubric_score(candidate=str(ws / "cpu_naive.py"), reference=ref)
    fused = rubric_score(candidate=str(ws / "cpu_fused.py"), reference=ref)
    assert naive.verdict == fused.verdict == "clean"
    for r in (naive, fused):
        assert not [m for m in _messages(r) if GPU_WORDS.search(m)], _messages(r)
        assert "C++ (CPU) engineering" in r.summary and "CUDA engineering" not in r.summary
    missing = [f.message for f in naive.dimensions.cuda_engineering.findings if f.code == "missing_technique"]
    assert any("SIMD" in m for m in missing) and any("multithreading" in m for m in missing)
    assert any("loop fusion" in m for m in missing)
    eng = fused.dimensions.cuda_engineering
    assert not [f for f in eng.findings if f.code == "missing_technique"], eng.findings
    found = " | ".join(f.message for f in eng.findings if f.code == "technique")
    assert "loop fusion (one pass over memory covers several reference ops)" in found
    assert "multithreading (at::parallel_for, OpenMP)" in found and "SIMD vectorisation" in found
    assert eng.score > naive.dimensions.cuda_engineering.score
    assert fused.overall > naive.overall


def test_cuda_candidates_keep_cuda_advice(ws):
    ref = str(ws / "reference.py")
    naive = rubric_score(candidate=str(ws / "cuda_naive.py"), reference=ref)
    fused = rubric_score(candidate=str(ws / "cuda_fused.py"), reference=ref)
    missing = " ".join(f.message for f in naive.dimensions.cuda_engineering.findings if f.code == "missing_technique")
    assert "float4" in missing and "kernel fusion" in missing
    assert "CUDA engineering" in fused.summary
    assert fused.overall > naive.overall


def test_coverage_line_reads_without_dangling_dashes(ws):
    r = rubric_score(candidate=str(ws / "cpu_fused.py"), reference=str(ws / "reference.py"))
    line = next(x for x in r.summary.splitlines() if "operator coverage" in x)
    assert "nothing left in PyTorch" in line and not re.search(r" -(;|$)", line), line
    hack = rubric_score(candidate=str(CASES / "relu_fallback.py"), reference=str(CASES / "relu_reference.py"))
    line = next(x for x in hack.summary.splitlines() if "operator coverage" in x)
    assert "no op in custom code; still in PyTorch: relu" in line


def _profile(ws_, task_id: str, device: str) -> None:
    get_workspace().add_report("profile_reference", ReferenceProfile(
        task_id=task_id, device=device, backend="torch", gpu_ms_per_iter=3.2,
        ops=[OpRow(name="aten::gelu", gpu_ms=2.0, share=0.6), OpRow(name="aten::mul", gpu_ms=1.2, share=0.4)]),
        task_id=task_id)


def test_planner_speaks_of_the_cpu_on_a_cpu_task(ws):
    task = get_workspace().add_task((ws / "reference.py").read_text(), name="ssg")
    _profile(ws, task.task_id, "CPU (x86_64)")
    text = render_planner(task.task_id)
    assert "custom CUDA" not in text and "GPU ms" not in text and "GPU time" not in text
    assert "CPU ms" in text and "at::parallel_for" in text and "loop fusion" in text


def test_planner_speaks_of_cuda_on_a_gpu_task_and_of_fp32_tensor_cores(ws):
    task = get_workspace().add_task((ws / "reference.py").read_text(), name="ssg")
    _profile(ws, task.task_id, "NVIDIA H100 80GB HBM3")
    text = render_planner(task.task_id)
    assert "custom CUDA" in text and "GPU ms" in text
    assert "3xTF32" in text and "plain TF32/BF16 is a precision drop" in text
    assert "cuBLASLt plan" in text  # plan caches are fine, output caches are not


def test_verifier_prompt_points_at_the_candidate_instead_of_repeating_it(ws):
    ref = str(ws / "reference.py")
    first = rubric_score(candidate=str(ws / "cuda_naive.py"), reference=ref)
    big = (ws / "cuda_fused.py").read_text() + "".join(f"\n# padding line {i} " + "x" * 80 for i in range(150))
    (ws / "big.py").write_text(big)
    task_id = first.task_id
    ws_ = get_workspace()
    cand = ws_.add_candidate(task_id, big, parent_id=first.candidate_id)
    rubric_score(candidate_id=cand.candidate_id)
    text = render_verifier(cand.candidate_id)
    assert len(big) > 15_000 and len(text) < 6_000, len(text)
    assert f"stitch://candidates/{cand.candidate_id}" in text
    assert "fused_kernel" in text  # the kernels it defines are named
    assert "```diff" in text and "+__global__ void fused_kernel" in text  # what changed is shown, clipped
    assert "### Feedback items" in text


def test_tf32_profile_suggestion_on_an_fp32_task_names_3xtf32(ws):
    ws_ = get_workspace()
    task = ws_.add_task((CASES / "matmul_reference.py").read_text(), name="mm")
    src = (CASES / "triton_add.py").read_text()  # a kernel with no tensor-core code yet
    cand = ws_.add_candidate(task.task_id, src)
    ws_.add_report("profile_kernel", KernelProfile(candidate_id=cand.candidate_id, kernels=[KernelDigest(
        name="add_kernel", duration_us=900.0, bound="compute-bound", suggestions=[Suggestion(
            rank=1, text="FP32 math on CUDA cores while the tensor cores idle: use tensor cores (WMMA/mma.sync, "
                         "cuBLAS/CUTLASS) in TF32 or BF16 where the tolerance allows")])]),
        task_id=task.task_id, candidate_id=cand.candidate_id)
    r = rubric_score(candidate_id=cand.candidate_id)
    open_ = [f.message for f in r.dimensions.cuda_engineering.findings if f.code == "profile_suggestion_open"]
    assert open_ and "3xTF32" in open_[0] and "precision downgrade" in open_[0]


def test_cards_tell_plan_caches_from_output_caches_and_name_3xtf32():
    cards = ROOT / "rag_index"
    rules = (cards / "fair-candidate-rules.md").read_text()
    assert "plan" in rules and "Caching outputs" in rules and "3xTF32" in rules
    lt = (cards / "cublaslt-epilogues.md").read_text()
    assert "never hold the output" in " ".join(lt.split())
    assert "3xTF32" in (cards / "tensor-cores.md").read_text()
    assert "3xTF32" in (cards / "mixed-precision.md").read_text()


def test_missing_techniques_become_feedback_items_in_the_targets_words(ws):
    from stitch_mcp.score import missing_technique_item

    naive = rubric_score(candidate=str(ws / "cpu_naive.py"), reference=str(ws / "reference.py"))
    items = [missing_technique_item(f) for f in naive.dimensions.cuda_engineering.findings
             if f.code == "missing_technique"]
    assert {i.split("]")[0] + "]" for i in items} == {"[cpu_simd]", "[cpu_threads]", "[loop_fusion]"}
    assert all(i.endswith(".") and not GPU_WORDS.search(i) for i in items), items
    assert "missing: SIMD vectorisation (omp simd" in naive.summary and "multithreading (at::parallel_for" in naive.summary
    tri = rubric_score(candidate=str(CASES / "triton_add.py"), reference=str(CASES / "matmul_reference.py"))
    items = [missing_technique_item(f) for f in tri.dimensions.cuda_engineering.findings
             if f.code == "missing_technique"]
    assert "[tensor_cores] Do the inner product with the language's matrix op (tl.dot" in " ".join(items)


def test_a_suggestion_that_already_names_3xtf32_is_left_as_it_is(ws):
    ws_ = get_workspace()
    task = ws_.add_task((CASES / "matmul_reference.py").read_text(), name="mm")
    cand = ws_.add_candidate(task.task_id, (CASES / "triton_add.py").read_text())
    text = ("FP32 math on CUDA cores while the tensor cores idle: for fp32 work keep fp32 accuracy on the tensor "
            "cores with 3xTF32 - plain TF32 or BF16 is a precision downgrade")
    ws_.add_report("profile_kernel", KernelProfile(candidate_id=cand.candidate_id, kernels=[KernelDigest(
        name="add_kernel", duration_us=900.0, suggestions=[Suggestion(rank=1, text=text)])]),
        task_id=task.task_id, candidate_id=cand.candidate_id)
    r = rubric_score(candidate_id=cand.candidate_id)
    open_ = [f.message for f in r.dimensions.cuda_engineering.findings if f.code == "profile_suggestion_open"]
    assert open_ == [f"profile_kernel suggested: {text}"]
