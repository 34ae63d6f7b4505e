"""One table of GPU ceilings and one roofline floor (issues 16 and 17)."""

from __future__ import annotations

import pytest

from stitch_mcp.ceilings import (
    ceilings_for,
    describe,
    impossible_floor,
    math_mode,
    reference_flops,
    roofline_floor,
)

H100 = "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("name, tbs, source", [
    (H100, 3.0, "measured"), ("NVIDIA H200", 4.3, "measured"), ("NVIDIA GH200 480GB", 4.0, "datasheet"),
    ("NVIDIA H100 PCIe", 2.0, "datasheet"), ("NVIDIA H20", 4.0, "datasheet"),
    ("NVIDIA A100-SXM4-80GB", 2.039, "datasheet"), ("NVIDIA A100-PCIE-40GB", 1.555, "datasheet"),
    ("NVIDIA A10G", 0.6, "datasheet"), ("NVIDIA L40S", 0.864, "datasheet"), ("NVIDIA L4", 0.3, "datasheet"),
    ("Tesla T4", 0.32, "datasheet"), ("Tesla V100-SXM2-32GB", 0.9, "datasheet"),
])
def test_each_gpu_is_found_once_with_a_labelled_source(name, tbs, source):
    c = ceilings_for(name)
    assert c.bandwidth.value == pytest.approx(tbs * 1e12) and c.bandwidth.source == source
    assert c.datasheet_bandwidth >= c.bandwidth.value  # a measured copy never beats the datasheet
    assert source in describe(c)


def test_fp32_with_tf32_off_uses_the_cuda_core_peak():
    """cuBLAS fp32 GEMM at 4096^3 on an H100: 137 GFLOP at 67 TFLOP/s is a 2.05 ms floor (compute-bound),
    not a memory floor of 0.07 ms that makes a 2.7 ms kernel '2% of the hardware limit'."""
    c = ceilings_for(H100)
    n = 4096
    flops, nbytes = 2 * n ** 3, 3 * n * n * 4
    floor = roofline_floor(c, nbytes, flops, dtype="torch.float32")
    assert floor.bound == "compute" and floor.ms == pytest.approx(2.05, rel=0.01)
    assert "FP32 (CUDA cores) (datasheet)" in floor.note and "measured copy" in floor.note
    assert 2.05 / 2.7 > 0.7  # what such a kernel now reads: ~76% of its floor
    tf32 = roofline_floor(c, nbytes, flops, dtype="torch.float32", tf32=True)
    bf16 = roofline_floor(c, nbytes / 2, flops, dtype="torch.bfloat16")
    assert tf32.ms < floor.ms / 5 and bf16.ms < tf32.ms and "(measured)" in bf16.note


def test_memory_bound_floor_and_bytes_only():
    c = ceilings_for(H100)
    relu = roofline_floor(c, 2 * 4 * 2 ** 28, 2 ** 28, dtype="float32")  # 1 GiB in, 1 GiB out
    assert relu.bound == "memory" and relu.ms == pytest.approx(2 * 4 * 2 ** 28 / 3.0e12 * 1e3)
    assert roofline_floor(c, 3e9, None).ms == pytest.approx(1.0)
    assert roofline_floor(c, None, None) is None
    assert c.floor_ms(None, 3e9) == pytest.approx(1.0)  # the profiler digests' spelling


def test_impossible_floor_is_below_every_honest_floor():
    """The integrity bound: bytes at the datasheet bandwidth, never FLOPs (a candidate may compute a
    matmul-then-sum as a matrix-vector product), never a measured number."""
    for name in (H100, "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "Tesla T4"):
        c = ceilings_for(name)
        for nbytes, flops in ((1e9, None), (1e8, 1e12), (1e6, 1e13)):
            fast = impossible_floor(c, nbytes)
            assert fast.bound == "memory" and "datasheet" in fast.note
            for dtype in ("float32", "bfloat16", "float64"):
                for tf32 in (False, True):
                    assert fast.ms <= roofline_floor(c, nbytes, flops, dtype=dtype, tf32=tf32).ms
    assert impossible_floor(ceilings_for(H100), 3.35e9).ms == pytest.approx(1.0)


def test_math_modes():
    assert math_mode("torch.float32") == "fp32" and math_mode("float32", tf32=True) == "tf32"
    assert math_mode("torch.bfloat16") == math_mode("torch.float16") == "fp16_tensor"
    assert math_mode("torch.float64") == "fp64" and math_mode(None) == "fp32"


def test_unknown_gpu_is_an_estimate_with_its_measured_copy():
    c = ceilings_for("Some Future GPU", sm_count=100, clock_khz=2_000_000, cc_major=10, measured_bandwidth=5e12)
    assert c.bandwidth.source == "measured" and c.peak("fp32").source == "estimate"
    assert c.datasheet_bandwidth == pytest.approx(6.5e12) and c.notes
    assert "measured copy x1.3" in impossible_floor(c, 1e9).note


def test_reference_flops_from_a_stored_profile():
    prof = {"ops": [{"name": "aten::mm", "flops": 1.0e12, "dtype": "torch.float32"},
                    {"name": "aten::relu", "flops": 1.0e6, "dtype": "torch.float32"},
                    {"name": "aten::copy_", "flops": None}]}
    assert reference_flops(prof) == (pytest.approx(1.000001e12), "torch.float32")
    assert reference_flops({"ops": []}) == (None, None) and reference_flops(None) == (None, None)


def test_timing_floors_off_the_gpu_is_empty():
    from stitch_mcp.ceilings import timing_floors

    assert timing_floors("cpu", 1_000_000, 1e9, "float32") == ({}, None)


@pytest.mark.gpu
def test_timing_floors_on_this_gpu():
    """What compile_and_check's run stage reports: a labelled roofline floor and a lower impossible bound."""
    from stitch_mcp.ceilings import timing_floors

    n = 4096
    fields, lowest = timing_floors("cuda", 3 * n * n * 4, 2 * n ** 3, "torch.float32", tf32=False)
    assert fields["floor_bound"] == "compute" and "FP32 (CUDA cores)" in fields["floor_note"]
    assert lowest.ms < fields["floor_ms"] and ("datasheet" in lowest.note or "measured copy x1.3" in lowest.note)
