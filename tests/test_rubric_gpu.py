"""Kernel-language candidates on a GPU (skipped without CUDA): Triton ships with torch, so its
candidates must check and score like CUDA C++ ones; CuPy runs where it is installed (the test skips
otherwise). The CuTe DSL, TileLang and NVRTC cases in tests/rubric_cases are written for the static
rubric only and are not claimed to run.

Run on the GPU machine:  python -m pytest -q tests/test_rubric_gpu.py
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from stitch_mcp.check import compile_and_check
from stitch_mcp.config import configure
from stitch_mcp.score import rubric_score

pytestmark = pytest.mark.gpu

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def ws(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    yield
    configure()


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed here")


@pytest.mark.parametrize("name, ref, package", [
    ("triton_add.py", "add_reference.py", "triton"),
    ("triton_matmul.py", "matmul_reference.py", "triton"),
    ("cupy_add.py", "add_reference.py", "cupy"),
])
def test_kernel_language_candidate_checks_and_scores_clean(name, ref, package):
    _needs(package)
    check = compile_and_check(reference=str(CASES / ref), candidate=str(CASES / name), compare_compile=False)
    assert check.verdict == "pass", check.summary
    rubric = rubric_score(candidate_id=check.candidate_id)
    assert rubric.verdict == "clean", rubric.summary
    assert rubric.dimensions.operator_coverage.score == 1.0
    print(f"{name}: {check.speedup_vs_eager}x eager; rubric {rubric.overall:.2f}")


def test_triton_epilogue_next_to_torch_matmul_is_suspect():
    _needs("triton")
    check = compile_and_check(reference=str(CASES / "matmul_reference.py"),
                              candidate=str(CASES / "triton_torch_main_op.py"), compare_compile=False)
    assert check.verdict == "pass", check.summary  # correct, and still not the candidate's own GEMM
    rubric = rubric_score(candidate_id=check.candidate_id)
    assert rubric.verdict == "suspect" and "matmul" in rubric.uncovered_ops, rubric.summary
