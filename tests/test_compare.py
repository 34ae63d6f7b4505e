"""The comparison behind every correctness trial (stitch_mcp.compare.compare) and the bit-level
helpers the integrity checks use, on small CPU tensors; chunk boundaries with a small chunk."""
import math

import pytest

from stitch_mcp import compare as compare_mod
from stitch_mcp import integrity

torch = pytest.importorskip("torch")


@pytest.fixture(params=[1 << 26, 7], ids=["one-chunk", "7-element-chunks"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(compare_mod, "CHUNK", request.param)


def test_identical_outputs_pass_with_no_error(chunk):
    r = torch.randn(5, 9)
    r[1, 2] = math.inf
    res = compare_mod.compare(r.clone(), r, 1e-4, 1e-4)
    assert res["ok"] and res["max_abs_err"] == 0 and res["mismatch_fraction"] == 0
    assert res["inf_count"] == 1 and res["nan_count"] == 0 and res["first_mismatch_index"] is None


def test_mismatches_are_counted_and_located(chunk):
    r = torch.randn(5, 9)
    o = r.clone()
    o[0, 3] += 1e-6  # within tolerance
    o[2, 4] += 0.5
    o[4, 8] = math.nan
    res = compare_mod.compare(o, r, 1e-4, 1e-4)
    assert not res["ok"] and res["nan_count"] == 1
    assert res["first_mismatch_index"] == [2, 4]
    assert res["mismatch_fraction"] == pytest.approx(2 / 45)
    assert res["max_abs_err"] == 1e300  # the NaN: an infinite error, reported finite
    assert "2 of 45 elements differ" in res["problems"][0]


def test_nan_where_the_reference_has_nan_matches(chunk):
    r = torch.randn(20)
    r[[3, 11]] = math.nan
    r[0] = 0.5  # a random r[0] above 1 swallowed the 1e-7 below (float32's spacing there is 1.2e-7)
    o = r.clone()
    o[0] += 1e-6
    res = compare_mod.compare(o, r, 1e-4, 1e-4)
    assert res["ok"] and res["nan_count"] == 2 and 0 < res["max_abs_err"] < 1e-4


def test_half_outputs_compare_in_float32():
    r = torch.randn(64).half()
    o = r.clone()
    o[10] = o[10] + 1
    res = compare_mod.compare(o, r, 1e-2, 1e-2)
    assert not res["ok"] and res["first_mismatch_index"] == [10]


def test_same_bits_is_exact():
    a = torch.tensor([0.0, math.nan, 1.0])
    assert integrity.same_bits(a, a.clone())
    assert not integrity.same_bits(a, torch.tensor([-0.0, math.nan, 1.0]))  # a sign bit changed
    c = torch.randn(4, dtype=torch.complex64)
    assert integrity.same_bits(c, c.clone()) and not integrity.same_bits(c, c * 2)
    assert integrity.same_bits(torch.arange(5), torch.arange(5))


def test_count_true_and_unwritten_count():
    assert integrity.count_true(torch.zeros(10, dtype=torch.bool)) == 0
    assert integrity.count_true(torch.tensor([True, False, True])) == 2
    poisoned = integrity.poisoned_like(torch.empty(6), "cpu")
    poisoned[:2] = 1.0
    assert integrity.unwritten_count(poisoned) == 4
    assert integrity.unwritten_count(poisoned[::2]) == 2  # a strided view


def test_fingerprint_tells_outputs_apart_and_tolerates_nan():
    x = torch.randn(1000)
    assert integrity.fingerprint(x) == integrity.fingerprint(x.clone())
    y = x.clone()
    y[500] += 1
    assert integrity.fingerprint(x) != integrity.fingerprint(y)
    x[7] = math.nan
    assert integrity.fingerprint(x) == integrity.fingerprint(x.clone())  # NaN != NaN would flag it


def test_near_zero_reference_with_an_unrelated_output_is_an_exploit():
    ref = torch.randn(100) * 1e-6
    assert compare_mod.near_zero_exploit(torch.zeros(100), ref, 1e-4)
    assert not compare_mod.near_zero_exploit(ref.clone(), ref, 1e-4)
    assert not compare_mod.near_zero_exploit(torch.zeros(100), torch.randn(100), 1e-4)  # a real scale
    nan_ref = ref.clone()
    nan_ref[0] = math.nan
    assert compare_mod.near_zero_exploit(torch.zeros(100), nan_ref, 1e-4)
