"""The wrapper corpus (tests/programs/wrappers: LLM-style host wrappers and C++ candidates) on the
header rungs: every source gets the same outcome from the light per-operator rung, climbing as a
build does, as from the real torch/extension.h (issue 15 item 1: a candidate that builds with plain
load_inline builds here), and a genuine error of the candidate's own costs no climb.

Real compiles (nvcc for .cu, the host compiler for .cpp), compile-only, through
stitch_mcp.build.compile.compile_on_rungs and tools/bench_header_rungs.py (which also reports the times).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_header_rungs", ROOT / "tools" / "bench_header_rungs.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_header_rungs"] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)

pytest.importorskip("torch")


def test_the_corpus_has_forty_styles_and_some_genuine_errors():
    wrappers = bench.corpus()
    assert len(wrappers) >= 40 and all(w.style for w in wrappers)
    assert {w.unit for w in wrappers} == {"kernel", "binding"}
    assert sum(not w.expect_ok for w in wrappers) >= 3


def ladder(name: str, tmp_path: Path):
    from stitch_mcp.build.compile import compile_on_rungs

    w = bench.corpus([name])[0]
    return w, compile_on_rungs(tmp_path, tmp_path / "work", w.unit, [w.source], w.functions, which="ladder")


def test_cpp_wrapper_dividing_a_tensor_builds_on_the_first_rung(tmp_path):
    """`return out / (float)n;` (issue 15): the Tensor operators are part of the light header."""
    w, runs = ladder("cpp_div_scalar", tmp_path)
    assert [r.ok for r in runs] == [True], runs[-1].output[-2000:]
    assert runs[0].label == "ATen per-operator"


def test_cpp_candidates_own_error_fails_without_climbing(tmp_path):
    w, runs = ladder("cpp_own_error", tmp_path)
    assert len(runs) == 1 and not runs[0].ok and "count" in runs[0].output


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_kernel_files_own_typo_fails_without_climbing(tmp_path):
    w, runs = ladder("own_typo", tmp_path)
    assert len(runs) == 1 and not runs[0].ok and "totl" in runs[0].output


@pytest.fixture(scope="module")
def rungs_root(tmp_path_factory) -> Path:
    """One folder for the stand-in headers the rungs compile against, shared by the corpus's sources."""
    return tmp_path_factory.mktemp("rungs")


# One test a source: each compiles on the ladder and on torch/extension.h (about 70 s of CPU for a .cu
# file, 2026-11-26), so that each is far from its timeout and the corpus spreads over xdist's workers;
# as one test (3,250 CPU-seconds for 54 sources) it could not finish within the slow tier's 900 s.
@pytest.mark.slow
@pytest.mark.parametrize("name", [w.name for w in bench.corpus()])
def test_every_wrapper_has_the_same_outcome_on_the_light_rung_as_on_torch_extension_h(name, rungs_root):
    w = bench.corpus([name])[0]
    if w.unit == "kernel" and not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    r = bench.row(w, bench.measure(w, rungs_root, "check"))
    assert r["same"] and r["ladder_ok"] == w.expect_ok, r
