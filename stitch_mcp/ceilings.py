"""The one table of GPU ceilings, and the one roofline floor every answer uses.

Each GPU has a memory bandwidth and dense math rates per *math mode*:

- `fp32`: FP32 on the CUDA cores, what fp32 work runs at when TF32 is off (PyTorch's default for
  matmuls, and what KernelBench's fp32 tasks ask for);
- `tf32`: TF32 tensor cores (fp32 inputs, 10-bit mantissa); 3xTF32 (fp32-accurate) runs at ~1/3;
- `fp16_tensor`: FP16/BF16 tensor cores with FP32 accumulation;
- `fp64`: FP64 (tensor cores where the GPU has them).

Every number says where it comes from: `measured` (../shared/REFERENCE.md section 6: device-to-
device copy 3.0 TB/s on an H100, 4.3 TB/s on an H200, bf16 matmul ~790 TFLOP/s), `datasheet`
(NVIDIA's dense, non-sparse figure), or `estimate` (an unknown GPU, from its SM count and clock).

Two floors, for two questions:

- `roofline_floor`: how fast could this work go here - max(bytes / bandwidth, FLOPs / peak of
  the dtype's math mode), with measured numbers where measured. "x% of the floor" is floor /
  measured time, the same in compile_and_check, profile_reference and profile_kernel.
- `impossible_floor`: below what time is a measurement impossible for honest work - the bytes
  at the datasheet bandwidth, no FLOPs (a candidate may find an algebraic shortcut the reference
  does not take), so an integrity finding built on it cannot be a false alarm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Source = Literal["measured", "datasheet", "estimate"]
MathMode = Literal["fp32", "tf32", "fp16_tensor", "fp64"]
MATH_MODES: tuple[MathMode, ...] = ("fp32", "tf32", "fp16_tensor", "fp64")
MODE_LABELS = {"fp32": "FP32 (CUDA cores)", "tf32": "TF32 tensor", "fp16_tensor": "BF16/FP16 tensor",
               "fp64": "FP64"}


@dataclass(frozen=True)
class Rate:
    value: float  # bytes/s or FLOP/s
    source: Source


@dataclass(frozen=True)
class Ceilings:
    name: str
    bandwidth: Rate  # bytes/s a kernel can reach: measured copy where measured, else datasheet
    datasheet_bandwidth: float  # bytes/s, the hardware's limit
    peaks: dict[str, Rate]  # math mode -> dense FLOP/s
    datasheet_peaks: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def peak(self, mode: str) -> Rate:
        return self.peaks.get(mode) or self.peaks["fp32"]

    # the names the profiler's digests and plots read (GB/s and TFLOP/s)
    @property
    def dram_gbps(self) -> float:
        return self.bandwidth.value / 1e9

    @property
    def fp32_tflops(self) -> float:
        return self.peak("fp32").value / 1e12

    @property
    def tf32_tflops(self) -> float:
        return self.peak("tf32").value / 1e12

    @property
    def fp16_tflops(self) -> float:
        return self.peak("fp16_tensor").value / 1e12

    @property
    def fp64_tflops(self) -> float:
        return self.peak("fp64").value / 1e12

    @property
    def source(self) -> str:
        return describe(self)

    def floor_ms(self, flops: float | None, nbytes: float | None, dtype: str | None = None,
                 tf32: bool = False) -> float | None:
        floor = roofline_floor(self, nbytes, flops, dtype=dtype, tf32=tf32)
        return floor.ms if floor else None


def describe(c: Ceilings) -> str:
    """'3.00 TB/s (measured copy); FP32 67 (datasheet), TF32 495 (datasheet), BF16/FP16 790 (measured) TFLOP/s'"""
    how = "measured copy" if c.bandwidth.source == "measured" else c.bandwidth.source
    bw = f"{c.bandwidth.value / 1e12:.2f} TB/s ({how})"
    rates = ", ".join(f"{MODE_LABELS[m].split(' (')[0]} {c.peaks[m].value / 1e12:.0f} ({c.peaks[m].source})"
                      for m in ("fp32", "tf32", "fp16_tensor") if m in c.peaks)
    return f"{c.name}: {bw}; {rates} TFLOP/s"


# pattern on the lower-cased device name -> datasheet (TB/s, fp32, tf32, fp16/bf16 tensor, fp64) TFLOP/s,
# dense. Order matters: the first match wins (GH200 before H200 before H20, A100 before A10, L40S before L4).
_DATASHEET: list[tuple[str, tuple[float, float, float, float, float]]] = [
    (r"gh200", (4.0, 67, 495, 989, 67)),
    (r"h200", (4.8, 67, 495, 989, 67)),
    (r"h100.*pcie", (2.0, 51, 378, 756, 51)),
    (r"h100.*nvl", (3.9, 60, 418, 835, 60)),
    (r"h100", (3.35, 67, 495, 989, 67)),
    (r"h800", (3.35, 67, 495, 989, 1)),
    (r"\bh20\b", (4.0, 44, 74, 148, 1)),
    (r"b200", (8.0, 80, 1100, 2250, 40)),
    (r"b100", (8.0, 60, 875, 1750, 30)),
    (r"a100.*80gb.*pcie|a100 80gb pcie", (1.935, 19.5, 156, 312, 19.5)),
    (r"a100.*80gb", (2.039, 19.5, 156, 312, 19.5)),
    (r"a100", (1.555, 19.5, 156, 312, 19.5)),
    (r"a800", (2.039, 19.5, 156, 312, 19.5)),
    (r"l40s", (0.864, 91.6, 183, 362, 1.4)),
    (r"l40\b", (0.864, 90.5, 90.5, 181, 1.4)),
    (r"\bl4\b", (0.3, 30.3, 60, 121, 0.5)),
    (r"a10g?\b", (0.6, 31.2, 62.5, 125, 1.0)),
    (r"rtx 4090", (1.008, 82.6, 82.6, 165, 1.3)),
    (r"rtx 6000 ada", (0.96, 91.1, 182, 364, 1.4)),
    (r"rtx 3090", (0.936, 35.6, 35.6, 71, 0.56)),
    (r"v100", (0.9, 15.7, 15.7, 125, 7.8)),
    (r"\bt4\b", (0.32, 8.1, 8.1, 65, 0.25)),
]
# measured on the project's test machines (REFERENCE.md section 6)
_MEASURED: list[tuple[str, dict[str, float]]] = [
    (r"gh200", {}),
    (r"h200", {"bandwidth": 4.3e12, "fp16_tensor": 790e12}),
    (r"h100.*(pcie|nvl)", {}),
    (r"h100", {"bandwidth": 3.0e12, "fp16_tensor": 790e12}),
]


def _first(table: list, low: str):
    return next((row for row in table if re.search(row[0], low)), None)


def ceilings_for(name: str | None, sm_count: int | None = None, clock_khz: float | None = None,
                 cc_major: int | None = None, measured_bandwidth: float | None = None) -> Ceilings:
    """The ceilings of a GPU by its name (as torch or ncu report it); an estimate when unknown
    (from its SM count and clock, and a measured copy bandwidth when one is given)."""
    low = (name or "").lower()
    row = _first(_DATASHEET, low)
    if row is not None:
        tbs, f32, tf32, f16, f64 = row[1]
        sheet = {"fp32": f32 * 1e12, "tf32": tf32 * 1e12, "fp16_tensor": f16 * 1e12, "fp64": f64 * 1e12}
        measured = (_first(_MEASURED, low) or ("", {}))[1]
        peaks = {m: Rate(measured[m], "measured") if m in measured else Rate(v, "datasheet") for m, v in sheet.items()}
        bw = Rate(measured["bandwidth"], "measured") if "bandwidth" in measured else Rate(tbs * 1e12, "datasheet")
        return Ceilings(name or row[0], bw, tbs * 1e12, peaks, sheet)
    notes = [f"unknown GPU {name!r}: its ceilings are estimates"]
    if sm_count and clock_khz:
        lanes = 128 if (cc_major or 8) >= 8 else 64  # fp32 lanes per SM; 2 FLOPs per FMA
        f32 = sm_count * lanes * 2 * clock_khz * 1e3
    else:
        f32 = 20e12
    sheet = {"fp32": f32, "tf32": f32 * 4, "fp16_tensor": f32 * 8, "fp64": f32 / 32}
    bw = Rate(measured_bandwidth, "measured") if measured_bandwidth else Rate(1e12, "estimate")
    peaks = {m: Rate(v, "estimate") for m, v in sheet.items()}
    # an unknown GPU's impossibility bound allows 30% over its measured copy rate
    return Ceilings(name or "gpu", bw, bw.value * 1.3, peaks, sheet, notes=notes)


def cpu_ceilings() -> Ceilings:
    """A rough host ceiling, only so a CPU run's digest can show intensities on some scale."""
    sheet = {"fp32": 1e12, "tf32": 1e12, "fp16_tensor": 1e12, "fp64": 0.5e12}
    return Ceilings("cpu", Rate(50e9, "estimate"), 50e9, {m: Rate(v, "estimate") for m, v in sheet.items()}, sheet,
                    notes=["no GPU: floors use a rough CPU ceiling (50 GB/s, 1 TFLOP/s)"])


def math_mode(dtype: str | None, tf32: bool = False) -> MathMode:
    """The math mode work of this dtype runs in: fp32 stays on the CUDA cores unless TF32 is on."""
    d = (dtype or "float32").lower()
    if any(k in d for k in ("bfloat16", "float16", "half", "bf16", "fp16", "float8", "fp8")):
        return "fp16_tensor"
    if any(k in d for k in ("float64", "double", "fp64")):
        return "fp64"
    return "tf32" if tf32 else "fp32"


@dataclass(frozen=True)
class Floor:
    ms: float
    memory_ms: float | None
    compute_ms: float | None
    bound: Literal["memory", "compute"]
    note: str  # how it was computed, with each number's source


def _fmt_bytes(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} KB"


def _floor(nbytes: float | None, flops: float | None, bw: float, bw_label: str, peak: float,
           peak_label: str) -> Floor | None:
    memory = nbytes / bw * 1e3 if nbytes else None
    compute = flops / peak * 1e3 if flops else None
    if memory is None and compute is None:
        return None
    bound = "compute" if (compute or 0) > (memory or 0) else "memory"
    parts = []
    if memory is not None:
        parts.append(f"{_fmt_bytes(nbytes)} at {bw / 1e12:.2f} TB/s {bw_label} = {memory:.4g} ms")
    if compute is not None:
        parts.append(f"{flops / 1e9:.3g} GFLOP at {peak / 1e12:.0f} TFLOP/s {peak_label} = {compute:.4g} ms")
    return Floor(max(x for x in (memory, compute) if x is not None), memory, compute, bound,
                 f"{bound}-bound: " + "; ".join(parts))


def roofline_floor(c: Ceilings, nbytes: float | None, flops: float | None, *, dtype: str | None = None,
                   tf32: bool = False) -> Floor | None:
    """The least time the work can take here: max(bytes / bandwidth, FLOPs / peak of its math mode)."""
    mode = math_mode(dtype, tf32)
    peak = c.peak(mode)
    bw_label = "(measured copy)" if c.bandwidth.source == "measured" else f"({c.bandwidth.source})"
    return _floor(nbytes, flops, c.bandwidth.value, bw_label, peak.value, f"{MODE_LABELS[mode]} ({peak.source})")


def impossible_floor(c: Ceilings, nbytes: float | None) -> Floor | None:
    """A time no honest implementation can beat: its inputs and outputs moved once at the datasheet
    bandwidth. Bytes only: the reference's FLOPs bound no candidate that finds an algebraic shortcut
    (a matmul followed by a sum is a matrix-vector product)."""
    known = not c.notes  # a GPU of the table; an unknown one allows 30% over its measured copy
    label = "(datasheet)" if known else ("(measured copy x1.3)" if c.bandwidth.source == "measured" else "(estimate)")
    return _floor(nbytes, None, c.datasheet_bandwidth, label, 1.0, "")


def reference_flops(ref_profile: dict | None) -> tuple[float | None, str | None]:
    """FLOPs of one forward of the reference, and the dtype of most of them, from a stored
    profile_reference (its op costs); (None, None) when it has none. A lower bound: ops without a
    cost, or past the profile's top rows, add nothing."""
    ops = (ref_profile or {}).get("ops") or []
    costed = [o for o in ops if o.get("flops")]
    if not costed:
        return None, None
    top = max(costed, key=lambda o: o["flops"])
    return float(sum(o["flops"] for o in costed)), top.get("dtype")


def for_torch_device(device: str = "cuda") -> Ceilings:
    """Ceilings of a torch CUDA device; an unknown GPU's bandwidth is measured with a copy."""
    import torch

    dev = torch.device(device)
    name = torch.cuda.get_device_name(dev)
    if _first(_DATASHEET, name.lower()) is not None:
        return ceilings_for(name)
    props = torch.cuda.get_device_properties(dev)
    clock = getattr(props, "clock_rate", None)
    return ceilings_for(name, props.multi_processor_count, clock, props.major, measured_bandwidth=_copy_rate(dev))


def _copy_rate(dev) -> float:
    import torch

    n = 128 * 1024 * 1024
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    b.copy_(a)
    torch.cuda.synchronize(dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        b.copy_(a)
    end.record()
    torch.cuda.synchronize(dev)
    return 2 * n * 5 / (start.elapsed_time(end) / 1e3)


def timing_floors(device: str, nbytes: int, flops: float | None = None, dtype: str | None = None,
                  tf32: bool = False) -> tuple[dict, Floor | None]:
    """For compile_and_check's run stage on a torch device: the timing fields (floor_ms, floor_bound,
    floor_note: the roofline floor with the reference's FLOPs when known) and the bound below which a
    measurement is impossible (bytes at the datasheet bandwidth). ({}, None) off the GPU."""
    if not str(device).startswith("cuda") or not nbytes:
        return {}, None
    c = for_torch_device(device)
    floor = roofline_floor(c, nbytes, flops, dtype=dtype, tf32=tf32)
    fields = {"floor_ms": floor.ms, "floor_bound": floor.bound, "floor_note": floor.note} if floor else {}
    return fields, impossible_floor(c, nbytes)
