"""This GPU's ceilings: memory bandwidth and math rates used for floors and rooflines.

Bandwidths are *measured* device-to-device copy rates where we have them (a kernel cannot beat a
copy), not datasheet numbers; math rates are dense rates (datasheet, or measured where noted).
Unknown GPUs fall back to an estimate from the SM count and clock, and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ceilings:
    name: str
    dram_gbps: float  # GB/s, 1e9 bytes/s
    fp32_tflops: float
    fp16_tflops: float  # dense tensor-core rate for fp16/bf16
    tf32_tflops: float
    fp64_tflops: float
    source: str = "table"
    notes: list[str] = field(default_factory=list)

    def peak_tflops(self, dtype: str | None) -> float:
        d = (dtype or "float32").lower()
        if any(k in d for k in ("float16", "bfloat16", "half", "bf16", "fp16")):
            return self.fp16_tflops
        if any(k in d for k in ("float64", "double", "fp64")):
            return self.fp64_tflops
        return self.fp32_tflops

    def floor_ms(self, flops: float | None, nbytes: float | None, dtype: str | None = None) -> float | None:
        """The least time an op can take here: the slower of moving its bytes and doing its math."""
        parts = []
        if nbytes:
            parts.append(nbytes / (self.dram_gbps * 1e9) * 1e3)
        if flops:
            parts.append(flops / (self.peak_tflops(dtype) * 1e12) * 1e3)
        return max(parts) if parts else None

    @property
    def ridge(self) -> float:
        """FLOP/byte where fp32 math and memory take the same time."""
        return self.fp32_tflops * 1e12 / (self.dram_gbps * 1e9)


# name fragment (lower case) -> (dram GB/s, fp32, fp16/bf16 tensor, tf32 tensor, fp64) TFLOP/s
_TABLE: list[tuple[str, tuple[float, float, float, float, float], str]] = [
    ("h200", (4300.0, 67.0, 790.0, 495.0, 67.0), "measured copy 4.3 TB/s, bf16 matmul 790 TFLOP/s"),
    ("gh200", (3700.0, 67.0, 790.0, 495.0, 67.0), "estimate"),
    ("h100 pcie", (1800.0, 51.0, 600.0, 378.0, 51.0), "estimate (0.9x datasheet)"),
    ("h100 nvl", (3500.0, 60.0, 740.0, 417.0, 60.0), "estimate (0.9x datasheet)"),
    ("h100", (3000.0, 67.0, 790.0, 495.0, 67.0), "measured copy 3.0 TB/s, bf16 matmul ~790 TFLOP/s"),
    ("h800", (3000.0, 67.0, 790.0, 495.0, 1.0), "estimate"),
    ("b200", (7200.0, 75.0, 2000.0, 1100.0, 37.0), "estimate (0.9x datasheet)"),
    ("a100-sxm4-80gb", (1800.0, 19.5, 290.0, 145.0, 19.5), "estimate (0.9x datasheet)"),
    ("a100 80gb", (1800.0, 19.5, 290.0, 145.0, 19.5), "estimate (0.9x datasheet)"),
    ("a100", (1400.0, 19.5, 290.0, 145.0, 19.5), "estimate (0.9x datasheet)"),
    ("l40s", (780.0, 91.6, 330.0, 165.0, 1.4), "estimate (0.9x datasheet)"),
    ("l4", (270.0, 30.3, 110.0, 55.0, 0.5), "estimate (0.9x datasheet)"),
    ("a10", (540.0, 31.2, 110.0, 55.0, 1.0), "estimate (0.9x datasheet)"),
    ("rtx 4090", (900.0, 82.6, 150.0, 75.0, 1.3), "estimate (0.9x datasheet)"),
    ("rtx 3090", (840.0, 35.6, 65.0, 32.0, 0.6), "estimate (0.9x datasheet)"),
    ("v100", (800.0, 15.7, 112.0, 15.7, 7.8), "estimate (0.9x datasheet)"),
    ("t4", (280.0, 8.1, 58.0, 8.1, 0.25), "estimate (0.9x datasheet)"),
]


def ceilings_for(name: str | None, sm_count: int | None = None, clock_khz: float | None = None,
                 cc_major: int | None = None) -> Ceilings:
    """Ceilings for a device by its name (as torch or ncu report it); an estimate when unknown."""
    low = (name or "").lower()
    for frag, (bw, f32, f16, tf32, f64), src in _TABLE:
        if frag in low:
            return Ceilings(name or frag, bw, f32, f16, tf32, f64, source=src)
    notes = [f"unknown GPU {name!r}: ceilings are estimates"]
    if sm_count and clock_khz:
        # 128 fp32 lanes per SM on sm_80+ (64 before), 2 flops per FMA.
        lanes = 128 if (cc_major or 8) >= 8 else 64
        f32 = sm_count * lanes * 2 * clock_khz * 1e3 / 1e12
        return Ceilings(name or "gpu", 1000.0, f32, f32 * 8, f32 * 4, f32 / 32, source="estimate", notes=notes)
    return Ceilings(name or "gpu", 1000.0, 20.0, 150.0, 75.0, 1.0, source="estimate", notes=notes)


def cpu_ceilings() -> Ceilings:
    """A rough host ceiling, only so CPU-mode digests can show intensities on some scale."""
    return Ceilings("cpu", 50.0, 1.0, 1.0, 1.0, 0.5, source="estimate",
                    notes=["no GPU: floors use a rough CPU ceiling (50 GB/s, 1 TFLOP/s)"])
