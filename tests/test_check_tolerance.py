"""compile_and_check's tolerance presets and failure reports, through the real check (worker
processes, purpose-written programs in tests/programs/), and the diagnosis the report gives from
its failed trials together."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitch_mcp.check import _diagnosis, compile_and_check
from stitch_mcp.config import configure
from stitch_mcp.errors import UserError
from stitch_mcp.models import NoiseReport, TrialResult

PROGRAMS = Path(__file__).resolve().parent / "programs"


def check(ref: str, cand: str, **kw):
    return compile_and_check(reference=str(PROGRAMS / f"{ref}.py"), candidate=str(PROGRAMS / f"{cand}.py"),
                             timing=False, compare_compile=False, **kw)


@pytest.mark.parametrize("ref,cand,verdict,reported", [
    ("ref_half_then_float", "cand_half_then_float_off", "fail", ("float16", 1e-2)),
    ("ref_argmax_softmax", "cand_argmax_softmax_written_out", "pass", ("float32", 1e-4)),
    ("ref_count_positive", "cand_count_near_positive", "fail", ("int64", 0.0)),
])
def test_each_output_is_held_to_its_own_dtypes_tolerance(ref, cand, verdict, reported):
    """A float32 output 0.5% off fails behind a float16 output (held to float32's 1e-4, not float16's
    1e-2); an honest softmax a rounding off passes behind an int64 argmax (held to float32's
    tolerance, not the integers' exact equality); a Python int counted a few off fails (integers,
    tensors or not, compare exactly). The report names the first floating output's."""
    r = check(ref, cand)
    assert r.verdict == verdict, r.summary
    c = r.correctness
    assert (c.output_dtype, c.atol) == (reported[0], pytest.approx(reported[1])), (c.output_dtype, c.atol)
    if verdict == "fail":
        assert all("output 1:" in " ".join(t.problems) for t in c.trials if not t.ok), c.trials


def test_precision_bug_fails_strict_with_worst_element_tolerance_and_noise():
    # operands rounded to float16 before a float32 matmul: ~1e-3 of the output's magnitude off
    r = check("ref_linear", "cand_linear_half_operands")
    assert r.verdict == "fail", r.summary
    c = r.correctness
    assert c.tolerance == "strict" and c.atol == pytest.approx(1e-4) and c.output_dtype == "float32"
    assert c.tolerance_by_dtype["float32/float64/complex"].rtol == pytest.approx(1e-4)
    assert c.tolerance_by_dtype["float16/bfloat16"].atol == pytest.approx(1e-2)
    t = next(t for t in c.trials if not t.ok)
    assert t.worst_index is not None and len(t.worst_index) == 2
    assert t.worst_tolerance == pytest.approx(1e-4 + 1e-4 * abs(t.worst_reference))
    assert abs(t.worst_candidate - t.worst_reference) == pytest.approx(t.max_tol_ratio * t.worst_tolerance, rel=1e-3)
    assert 1 < t.max_tol_ratio < 100 and t.max_rel_err < 1e-2
    assert t.input_summary and t.input_summary[0].startswith("input 0: float32[32, 128], mean")
    assert t.noise is not None and t.noise.measured and 0 < t.noise.reference_max_abs < 1e-5
    assert t.noise.error_to_noise > 10 and t.noise.within_noise is False
    assert "accumulation precision" in c.diagnosis and "indexing" in c.diagnosis
    assert "x its tolerance" in r.reasons[0] and "the reference's own noise" in r.reasons[0]
    assert "Likely cause: small errors" in r.summary and "strict tolerance: atol=0.0001" in r.summary
    assert r.route is not None and any("Likely cause: small errors" in f for f in r.route.feedback)


@pytest.mark.slow
def test_the_same_precision_bug_passes_under_kernelbench():
    ok = check("ref_linear", "cand_linear_half_operands", tolerance="kernelbench")
    assert ok.verdict == "pass", ok.summary
    assert ok.correctness.tolerance == "kernelbench" and ok.correctness.atol == pytest.approx(1e-2)
    assert all(0 < t.max_tol_ratio < 0.5 and t.noise is None for t in ok.correctness.trials)
    assert "kernelbench tolerance: atol=0.01, rtol=0.01 for float32" in ok.summary


def test_unknown_preset_is_the_callers_error():
    with pytest.raises(UserError, match="kernelbench"):
        check("ref_relu", "cand_relu_torch", tolerance="loose")


@pytest.mark.slow
def test_setting_chooses_the_preset_and_explicit_values_still_win():
    configure(tolerance="kernelbench")
    try:
        r = check("ref_linear", "cand_linear_half_operands", atol=1e-5, rtol=1e-5)
        assert r.verdict == "fail" and r.correctness.tolerance == "kernelbench+atol+rtol"
        assert r.correctness.atol == pytest.approx(1e-5)
    finally:
        configure()  # back to the environment's settings


@pytest.mark.slow
@pytest.mark.parametrize("ref,cand,words", [
    ("ref_linear", "cand_linear_frozen", "only trials with re-initialised weights fail"),
    ("ref_relu", "cand_wrong", "the reference is exact in float32 here"),  # relu(x) * 1.01
    ("ref_scale", "cand_clamp_range", "inputs fail (the task's own inputs pass)"),
])
def test_diagnosis_follows_the_evidence(ref, cand, words):
    r = check(ref, cand)
    assert r.verdict == "fail", r.summary
    assert words in r.correctness.diagnosis, r.correctness.diagnosis
    assert f"Likely cause: {r.correctness.diagnosis}" in r.summary


# ------------------------------------------------------------------ the diagnosis on its own


def trial(i, ok=False, weights="task", inputs="task", rel=0.5, frac=0.01, noise=None, nan=0):
    return TrialResult(trial=i, seed=i, ok=ok, weights=weights, inputs=inputs, max_rel_err=0.0 if ok else rel,
                       mismatch_fraction=0.0 if ok else frac, max_abs_err=0.0 if ok else 1.0, nan_count=nan,
                       worst_index=None if ok else [0], noise=noise)


def noise(ratio, ref=1e-7):
    return NoiseReport(measured=True, reference_max_abs=ref, candidate_max_abs=ratio * ref, error_to_noise=ratio,
                       within_noise=ratio <= 2)


@pytest.mark.parametrize("trials,words", [
    ([trial(0, ok=True), trial(1, weights="reinit")], "re-initialised weights"),
    ([trial(0, ok=True), trial(1, inputs="heavy_tailed")], "only heavy_tailed inputs fail"),
    ([trial(0, nan=3)], "NaN or inf"),
    ([trial(0, rel=1e-5, noise=noise(1.5))], "within the reference's own rounding noise"),
    ([trial(0, rel=1e-5, noise=noise(8))], "summation order"),
    ([trial(0, rel=3e-3, noise=noise(4000))], "accumulation precision"),
    ([trial(0, rel=1e-2, noise=noise(1e300, ref=0.0))], "exact in float32"),
    ([trial(0, rel=2.0, frac=0.03)], "indexing and bounds"),
    ([trial(0, rel=2.0, frac=0.9)], "the computation itself differs"),
    ([trial(0, ok=True)], ""),
    # small errors that cross the tolerance only where values are larger are still precision
    ([trial(0, ok=True), trial(1, inputs="heavy_tailed", rel=2e-3, noise=noise(2000))],
     "small errors (only on heavy_tailed inputs"),
    ([trial(0, ok=True), trial(1, weights="reinit", rel=2e-3, noise=noise(2000))],
     "small errors (only with re-initialised weights"),
])
def test_diagnosis_branches(trials, words):
    got = _diagnosis(trials)
    assert (words in got) if words else got == ""


@pytest.mark.gpu
def test_precision_bug_on_a_gpu_reports_tolerance_and_noise():
    r = check("ref_linear", "cand_linear_half_operands")
    assert r.verdict == "fail" and r.device != "cpu", r.summary
    t = next(t for t in r.correctness.trials if not t.ok)
    assert t.noise is not None and t.noise.measured and t.noise.error_to_noise > 10, t.noise
    assert t.worst_tolerance and t.input_summary and "the reference's own noise" in r.summary
    print(r.summary)  # the failing summary, for the GPU run's record (pytest -s)
