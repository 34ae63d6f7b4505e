"""compile_and_check's build stage on this CPU host (torch CPU build, nvcc, no GPU), through the
real path: a worker process, real nvcc and host-compiler builds.

- Wrapper arithmetic on a tensor (`return out / (float)n;`) is no compile error (issue 15 item 1),
  for a C++ candidate (built and run) and a CUDA one (compiled, needs a GPU).
- A CUDA candidate including ATen/cuda/CUDAContext.h and c10/cuda/CUDAGuard.h, whose CUDA library
  headers and generated torch CUDA headers a CPU host lacks, is compiled as far as the candidate's
  own code and reported as needing a GPU, with build.ok and no error diagnostic, and cached
  (issue 15 item 6, issue 16's first Coder item).
- A genuine error in such a candidate is still its compile error, on its own line.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from stitch_mcp.check import compile_and_check

PROGRAMS = Path(__file__).resolve().parent / "programs"
needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")


def check(cand: str, **kw):
    kw.setdefault("timing", False)
    kw.setdefault("compare_compile", False)
    return compile_and_check(reference=str(PROGRAMS / "ref_relu.py"), candidate=str(PROGRAMS / f"{cand}.py"), **kw)


def header_errors(report) -> list:
    """Error diagnostics that are not on a line of the candidate (a torch or CUDA header's)."""
    return [d for d in report.build.diagnostics if d.severity == "error" and not d.candidate_line]


def test_cpp_wrapper_dividing_its_output_tensor_builds_and_passes():
    r = check("cand_cpp_div_scalar")
    assert r.verdict == "pass", r.summary
    assert r.build.ok and not header_errors(r)


@pytest.mark.slow
@needs_nvcc
def test_cuda_wrapper_dividing_its_output_tensor_is_no_compile_error():
    r = check("cand_cuda_div_scalar")
    assert r.error_kind == "needs_gpu" and r.build.ok, r.summary
    assert not [d for d in r.build.diagnostics if d.severity == "error"]


@pytest.mark.timeout(120)  # an nvcc build: 13 s alone, 27 s beside another test on 2 cores
@needs_nvcc
def test_cuda_context_candidate_reaches_its_own_code_and_needs_gpu():
    t0 = time.monotonic()
    r = check("cand_cuda_context")
    first_s = time.monotonic() - t0
    assert r.verdict == "error" and r.error_kind == "needs_gpu", r.summary
    assert r.build.ok and r.build.extensions[0].with_cuda and not r.build.cached
    assert not [d for d in r.build.diagnostics if d.severity == "error"], r.build.diagnostics
    assert "cusparse" not in " ".join(r.reasons) and "compile error" not in r.summary
    assert "compiled;" in r.reasons[0]  # its kernel compiled, not 'compiled only as far as ...'
    t0 = time.monotonic()
    again = check("cand_cuda_context")  # the partial build is cached: no build worker at all
    assert again.error_kind == "needs_gpu" and again.build.ok and again.build.cached, again.summary
    assert time.monotonic() - t0 < first_s and again.stage_seconds["build"] == 0.0


@needs_nvcc
def test_cuda_context_candidates_own_error_is_its_compile_error_on_its_line():
    r = check("cand_cuda_context_error")
    assert r.verdict == "error" and r.error_kind == "compile_error", r.summary
    d = r.build.diagnostics[0]
    assert d.file == "cuda.cu" and d.candidate_line == 19 and "blocks" in d.message, d
    assert "candidate line 19" in r.reasons[0]
    assert not header_errors(r)
    # a name of its own: the same error on every rung, so the kernel is not rebuilt with more
    assert r.build.extensions[0].kernel_header == "ATen per-operator"


@pytest.mark.slow
@needs_nvcc
def test_cuda_candidate_calling_a_library_this_host_lacks_is_compiled_as_far_as_it_can_be(tmp_path):
    """cuBLAS calls on a host without cuBLAS headers: needs a GPU, build.ok, the library's missing
    declarations told as notes (not checked here), never a compile error; cached."""
    r = check("cand_cuda_cublas")
    assert r.error_kind == "needs_gpu" and r.build.ok, r.summary
    from stitch_mcp.build.host_headers import host_cuda_headers

    if "cublas_v2.h" in host_cuda_headers(tmp_path).stood_in:
        assert "cublas" in r.reasons[0] and "only as far as" in r.reasons[0]
        assert any(d.severity == "note" and "cublasSgemv" in d.message for d in r.build.diagnostics)
    assert not [d for d in r.build.diagnostics if d.severity == "error"]
    again = check("cand_cuda_cublas")
    assert again.build.cached and again.error_kind == "needs_gpu"
    assert [d.message for d in again.build.diagnostics] == [d.message for d in r.build.diagnostics]
