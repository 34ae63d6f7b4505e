"""stitch_mcp.compare beyond pass/fail: the worst element and its tolerance, relative errors that
mean something near zero, non-finite references, the tolerance presets, and the reference's own
float64 noise, on small CPU tensors and models (chunk boundaries with a 7-element chunk)."""
import math

import pytest

from stitch_mcp import compare as cmp

torch = pytest.importorskip("torch")
nn = torch.nn


@pytest.fixture(params=[1 << 26, 7], ids=["one-chunk", "7-element-chunks"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(cmp, "CHUNK", request.param)


# ------------------------------------------------------------------ worst element and relative error


def test_worst_element_carries_its_values_and_tolerance(chunk):
    r = torch.linspace(-2, 2, 45).reshape(5, 9)
    o = r.clone()
    o[0, 1] += 3e-4  # beyond tolerance, near |ref| = 1.9
    o[4, 6] += 5e-4  # the worst by tolerance ratio, in a later chunk
    res = cmp.compare(o, r, 1e-4, 1e-4)
    assert not res["ok"] and res["worst_index"] == [4, 6]
    ref = float(r[4, 6])
    assert res["worst_reference"] == pytest.approx(ref) and res["worst_candidate"] == pytest.approx(float(o[4, 6]))
    assert res["worst_tolerance"] == pytest.approx(1e-4 + 1e-4 * abs(ref))
    assert res["max_tol_ratio"] == pytest.approx(float(o[4, 6] - r[4, 6]) / res["worst_tolerance"], rel=1e-3)
    assert res["first_mismatch_index"] == [0, 1]


def test_near_zero_reference_gives_a_bounded_relative_error(chunk):
    r = torch.randn(64)
    r[5] = 1e-9  # the old error / |ref| made this element's relative error 5e4
    o = r.clone()
    o[5] += 5e-5  # within atol: the trial passes
    res = cmp.compare(o, r, 1e-4, 1e-4)
    assert res["ok"] and res["worst_index"] == [5]
    assert res["max_rel_err"] < 1e-3  # relative to the output's mean |ref| (~0.8), not to 1e-9
    assert 0.4 < res["max_tol_ratio"] < 0.6


def test_passing_trial_reports_how_much_of_the_tolerance_it_used(chunk):
    r = torch.randn(100)
    res = cmp.compare(r + 2e-5, r, 1e-4, 1e-4)
    assert res["ok"] and 0 < res["max_tol_ratio"] < 1 and res["max_rel_err"] < 1e-3


def test_reference_inf_or_nan_matches_only_itself(chunk):
    r = torch.tensor([1.0, math.inf, -math.inf, math.nan, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert cmp.compare(r.clone(), r, 1e-4, 1e-4)["ok"]
    for where, value in ((1, 0.0), (1, math.nan), (3, 7.0), (2, math.inf)):
        o = r.clone()
        o[where] = value
        res = cmp.compare(o, r, 1e-2, 1e-2)
        assert not res["ok"], (where, value)
        assert res["worst_index"] == [where] and res["max_tol_ratio"] == cmp.BIG and res["worst_tolerance"] == 0.0


def test_candidate_nan_is_the_worst_element(chunk):
    r = torch.randn(20)
    o = r.clone()
    o[3] += 1.0
    o[17] = math.nan
    res = cmp.compare(o, r, 1e-4, 1e-4)
    assert res["worst_index"] == [17] and math.isnan(res["worst_candidate"])
    assert res["max_abs_err"] == cmp.BIG and res["nan_count"] == 1


def test_complex_outputs_compare_real_and_imaginary_parts(chunk):
    r = torch.randn(4, 3, dtype=torch.complex64)
    o = r.clone()
    o[2, 1] += 0.5j
    res = cmp.compare(o, r, 1e-4, 1e-4)
    assert not res["ok"] and res["worst_index"] == [2, 1, 1]  # the imaginary part
    assert res["worst_reference"] == pytest.approx(float(r[2, 1].imag))


def test_integer_outputs_compare_exactly():
    r = torch.arange(12).reshape(3, 4)
    assert cmp.compare(r.clone(), r, 1e-2, 1e-2)["ok"]
    o = r.clone()
    o[1, 2] += 3
    o[2, 0] += 1
    res = cmp.compare(o, r, 1e-2, 1e-2)
    assert not res["ok"] and res["worst_index"] == [1, 2] and res["worst_tolerance"] == 0.0
    assert res["worst_reference"] == 6 and res["worst_candidate"] == 9 and res["max_abs_err"] == 3
    b = torch.tensor([True, False, True])
    assert not cmp.compare(~b, b, 0.0, 0.0)["ok"]


def test_tuple_outputs_name_the_output_of_the_worst_element(chunk):
    a, b = torch.randn(6), torch.randn(2, 5)
    b2 = b.clone()
    b2[1, 4] += 1.0
    res = cmp.compare((a.clone(), b2), (a, b), 1e-4, 1e-4)
    assert res["worst_index"] == [1, 1, 4] and res["first_mismatch_index"] == [1, 1, 4]
    assert "output 1:" in res["problems"][0]
    bad = cmp.compare((a.clone(), b.t()), (a, b), 1e-4, 1e-4)
    assert not bad["ok"] and "shape" in bad["problems"][0]


# ------------------------------------------------------------------ tolerances


def test_tolerance_presets_and_overrides():
    strict = cmp.tolerance_table("strict")
    assert strict["atol"] == strict["rtol"] == 1e-4 and strict["atol_half"] == 1e-2 and strict["preset"] == "strict"
    kb = cmp.tolerance_table("kernelbench", {"atol": None, "rtol": 5e-3})
    assert kb["atol"] == 1e-2 and kb["rtol"] == 5e-3 and kb["preset"] == "kernelbench+rtol"
    with pytest.raises(ValueError):
        cmp.tolerance_table("loose")
    spec = {"tol": cmp.tolerance_table("kernelbench"), "atol": 1e-3, "rtol": None}
    assert cmp.tolerances("float32", spec) == (1e-3, 1e-2)
    assert cmp.tolerances("bfloat16", spec) == (1e-3, 1e-2)
    assert cmp.tolerance_label(spec) == "kernelbench+atol"
    plain = {"tol": cmp.tolerance_table("strict")}
    assert cmp.tolerances("int64", plain) == (0.0, 0.0) and cmp.tolerances("float16", plain) == (1e-2, 1e-2)
    assert cmp.tolerance_by_dtype(plain)["float32/float64/complex"] == (1e-4, 1e-4)


# ------------------------------------------------------------------ the reference's own noise


class LinearModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(256, 64)

    def forward(self, x):
        return self.linear(x)


def _linear_case():
    torch.manual_seed(0)
    model = LinearModel()
    inputs = [torch.randn(32, 256)]
    with torch.no_grad():
        ref = model(*inputs)
    return model, inputs, ref


def test_float32_reference_noise_is_small_and_nonzero(chunk):
    model, inputs, ref = _linear_case()
    n = cmp.reference_noise(model, inputs, ref)
    assert n.measured and 0 < n.reference_max_abs < 1e-5 and n.candidate_max_abs is None
    assert next(model.parameters()).dtype == torch.float32  # the model itself is untouched
    same = cmp.reference_noise(model, inputs, ref, ref.clone(), 1e-4, 1e-4)
    assert same.within_noise and same.error_to_noise == pytest.approx(1.0) and "within noise" in same.text
    assert 0 < same.reference_tol_ratio < 0.5


def test_candidate_error_is_a_multiple_of_the_noise(chunk):
    model, inputs, ref = _linear_case()
    n = cmp.reference_noise(model, inputs, ref, ref + 1e-3, 1e-4, 1e-4)
    assert n.measured and not n.within_noise and n.error_to_noise > 100
    assert "x the reference's own noise" in n.text


def test_exact_reference_has_zero_noise():
    x = [torch.randn(50)]
    n = cmp.reference_noise(nn.ReLU(), x, torch.relu(x[0]), torch.relu(x[0]) * 1.01)
    assert n.measured and n.reference_max_abs == 0 and n.error_to_noise == cmp.BIG and "exact" in n.text


class ArgmaxModel(nn.Module):
    def forward(self, x):
        return x.argmax(dim=-1)


class FixedDtypeModel(nn.Module):
    def forward(self, x):
        return (x * 2).float()


class MixedDtypeModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randn(8, 8), persistent=False)
        self.w_copy = torch.randn(8, 8)  # a plain attribute: not cast with the module

    def forward(self, x):
        return x @ self.w_copy


@pytest.mark.parametrize("model,words", [
    (ArgmaxModel(), "not floating point"),
    (FixedDtypeModel(), "fixed dtype"),
    (MixedDtypeModel(), "does not run in float64"),
])
def test_noise_skips_cleanly(model, words):
    x = [torch.randn(4, 8)]
    with torch.no_grad():
        ref = model(*x)
    n = cmp.reference_noise(model, x, ref, ref)
    assert not n.measured and words in n.skipped, n.skipped
    assert cmp.failure_context(model, x, ref, ref, 1e-4, 1e-4)["noise"]["skipped"] == n.skipped


def test_reference_noise_leaves_the_inputs_alone():
    class InPlace(nn.Module):
        def forward(self, x, idx):
            idx.add_(1)
            return x.mul_(2).sum(0)

    x, idx = torch.randn(5, 3), torch.arange(3)
    before = (x.clone(), idx.clone())
    n = cmp.reference_noise(InPlace(), [x, idx], before[0].clone().mul_(2).sum(0))
    assert n.measured
    assert torch.equal(x, before[0]) and torch.equal(idx, before[1])


def test_describe_inputs():
    lines = cmp.describe_inputs([torch.full((2, 3), 2.0), torch.arange(4), 0.5,
                                 torch.tensor([1.0, math.inf, 3.0])])
    assert lines[0] == "input 0: float32[2, 3], mean 2, std 0, range [2, 2]"
    assert lines[1] == "input 1: int64[4], range [0, 3]" and lines[2] == "input 2: 0.5"
    assert "1 non-finite" in lines[3] and "range [1, 3]" in lines[3]


@pytest.mark.gpu
def test_reference_noise_on_a_gpu():
    torch.manual_seed(0)
    model = LinearModel().cuda()
    inputs = [torch.randn(32, 256, device="cuda")]
    torch.backends.cuda.matmul.allow_tf32 = False  # as the run stage sets it
    with torch.no_grad():
        ref = model(*inputs)
    n = cmp.reference_noise(model, inputs, ref, ref.half().float(), 1e-4, 1e-4)
    assert n.measured and 0 < n.reference_max_abs < 1e-5, n
    assert not n.within_noise and n.error_to_noise > 10
    assert next(model.parameters()).dtype == torch.float32
