"""Nsight Compute: run `ncu` on the driver, read its report (ncu_report, else `--csv --page raw`),
and turn each kernel's metrics into a KernelDigest: bound verdict with its numbers, occupancy
limiter, stalls, roofline position and ranked suggestions.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import logging
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from stitch_mcp.errors import UserError
from stitch_mcp.models import HotLine, KernelDigest, Stall, Suggestion
from stitch_mcp.profiling.names import short_kernel_name
from stitch_mcp.ceilings import Ceilings

log = logging.getLogger(__name__)

SECTIONS = {
    "quick": ["SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats",
              "WarpStateStats"],
    "source": ["SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats",
               "WarpStateStats", "SourceCounters"],
    "full": [],  # --set full
}
# counters for the roofline (FLOPs and DRAM bytes); dropped when this ncu/GPU does not know them
EXTRA_METRICS = [
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dmul_pred_on.sum", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum", "sm__ops_path_tensor_src_fp8.sum",
    "sm__ops_path_tensor_src_int8.sum", "sm__ops_path_tensor_src_fp64.sum",
    "smsp__sass_inst_executed_op_local_ld.sum", "smsp__sass_inst_executed_op_local_st.sum",
]

PERM_HELP = ("ncu is not allowed to read GPU performance counters here (ERR_NVGPUCTRPERM). Enable them: "
             "run as root, or as root set `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "
             "/etc/modprobe.d/ and reload the driver (or reboot); in a container, start it with "
             "--cap-add=SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM")

# unit -> factor to the base unit (bytes, bytes/s, seconds, Hz, %)
_SCALE = {
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "byte/s": 1.0, "Kbyte/s": 1e3, "Mbyte/s": 1e6, "Gbyte/s": 1e9, "Tbyte/s": 1e12,
    "byte/second": 1.0, "Kbyte/second": 1e3, "Mbyte/second": 1e6, "Gbyte/second": 1e9, "Tbyte/second": 1e12,
    "Kbyte/block": 1e3, "byte/block": 1.0, "Mbyte/block": 1e6,
    "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0,
    "hz": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "cycle/nsecond": 1e9, "cycle/usecond": 1e6,
}


# ------------------------------------------------------------------ parsed launches


@dataclass
class Launch:
    id: int
    name: str
    metrics: dict[str, tuple[Any, str]] = field(default_factory=dict)
    source: list[dict[str, Any]] = field(default_factory=list)

    def raw(self, name: str) -> Any:
        v = self.metrics.get(name)
        return v[0] if v else None

    def num(self, name: str, unit: str | None = None) -> float | None:
        """A metric as a float, scaled to its base unit (bytes, seconds, bytes/s) when it has one."""
        v = self.metrics.get(name)
        if v is None:
            return None
        value, u = v
        if isinstance(value, str):
            value = _to_number(value)
        if value is None:
            return None
        if isinstance(value, str):
            return None
        scale = _SCALE.get(u or "", 1.0)
        return float(value) * scale

    def first(self, *names: str) -> float | None:
        for n in names:
            v = self.num(n)
            if v is not None:
                return v
        return None

    @property
    def grid(self) -> str:
        return _dim_str(self.raw("Grid Size")) or _dims(self, "launch__grid_dim")

    @property
    def block(self) -> str:
        return _dim_str(self.raw("Block Size")) or _dims(self, "launch__block_dim")


def _dim_str(v: Any) -> str:
    return str(v).replace(" ", "") if v else ""


def _dims(launch: Launch, prefix: str) -> str:
    vals = [launch.num(f"{prefix}_{a}") for a in "xyz"]
    if all(v is None for v in vals):
        return ""
    return "(" + ",".join(str(int(v or 1)) for v in vals) + ")"


def _to_number(text: str) -> float | str | None:
    t = text.strip()
    if t in ("", "n/a", "no data", "N/A"):
        return None
    try:
        return float(t.replace(",", ""))
    except ValueError:
        return t


def parse_raw_csv(text: str) -> list[Launch]:
    """`ncu --csv --page raw`: header row of metric names, a units row, then one row per launch."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # drop ==PROF==/==WARNING== lines
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2:
        return []
    header, units = rows[0], rows[1]
    has_units = "ID" in header and (not units or units[header.index("ID")] == "")
    data = rows[2:] if has_units else rows[1:]
    launches = []
    for row in data:
        metrics: dict[str, tuple[Any, str]] = {}
        for i, name in enumerate(header):
            if i >= len(row):
                break
            unit = units[i] if has_units and i < len(units) else ""
            value = _to_number(row[i])
            if name in ("Kernel Name", "Block Size", "Grid Size", "Process Name", "Host Name") or \
                    name.startswith("device__attribute_display_name"):
                value = row[i]
            metrics[name] = (value, unit)
        lid = metrics.get("ID", (len(launches), ""))[0]
        launches.append(Launch(id=int(lid) if isinstance(lid, float) else len(launches),
                               name=str(metrics.get("Kernel Name", ("?", ""))[0]), metrics=metrics))
    return launches


def parse_dump_json(data: dict | str | Path) -> list[Launch]:
    """The JSON that ncu_dump writes from the ncu_report interface."""
    if not isinstance(data, dict):
        data = json.loads(Path(data).read_text())
    out = []
    for entry in data.get("launches", []):
        metrics = {k: (v[0], v[1] if len(v) > 1 else "") for k, v in entry.get("metrics", {}).items()}
        out.append(Launch(id=int(entry.get("id", len(out))), name=str(entry.get("name", "?")), metrics=metrics,
                          source=entry.get("source") or []))
    return out


# ------------------------------------------------------------------ digest

STALL_RE = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
STALL_TEXT = {
    "long_scoreboard": "waiting on global/local memory (L1TEX) results",
    "lg_throttle": "local/global memory instruction queue full",
    "mio_throttle": "shared-memory/special-function instruction queue full",
    "short_scoreboard": "waiting on shared memory / MIO results",
    "math_pipe_throttle": "math pipe busy",
    "wait": "fixed-latency dependency",
    "barrier": "waiting at __syncthreads",
    "membar": "memory barrier",
    "not_selected": "eligible but another warp issued",
    "dispatch_stall": "dispatch stall",
    "branch_resolving": "branch resolution",
    "no_instruction": "instruction cache miss",
    "imc_miss": "constant cache miss",
    "tex_throttle": "texture queue full",
    "drain": "draining memory at exit",
    "sleeping": "sleeping",
    "gmma": "waiting on warpgroup MMA",
    "misc": "misc",
}


def _flops(l: Launch) -> tuple[float | None, str]:
    """Executed FLOPs and the dominant kind (fp32/fp64/fp16/tensor), None without the counters."""
    def s(*names: str) -> float | None:
        vals = [l.num(n) for n in names]
        return None if all(v is None for v in vals) else sum(v or 0.0 for v in vals)

    p = "sm__sass_thread_inst_executed_op_"
    fp32 = s(f"{p}fadd_pred_on.sum", f"{p}fmul_pred_on.sum")
    ffma = l.num(f"{p}ffma_pred_on.sum")
    fp64 = s(f"{p}dadd_pred_on.sum", f"{p}dmul_pred_on.sum")
    dfma = l.num(f"{p}dfma_pred_on.sum")
    fp16 = s(f"{p}hadd_pred_on.sum", f"{p}hmul_pred_on.sum")
    hfma = l.num(f"{p}hfma_pred_on.sum")
    tensor = s("sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
               "sm__ops_path_tensor_src_fp8.sum", "sm__ops_path_tensor_src_int8.sum",
               "sm__ops_path_tensor_src_fp64.sum")
    tf32 = l.num("sm__ops_path_tensor_src_tf32_dst_fp32.sum")
    kinds = {
        "fp32": None if fp32 is None and ffma is None else (fp32 or 0) + 2 * (ffma or 0),
        "fp64": None if fp64 is None and dfma is None else (fp64 or 0) + 2 * (dfma or 0),
        "fp16": None if fp16 is None and hfma is None else 2 * ((fp16 or 0) + 2 * (hfma or 0)),  # packed half2
        "tensor": tensor,
        "tf32": tf32,  # TF32 tensor cores run at about half the BF16 rate
    }
    known = {k: v for k, v in kinds.items() if v is not None}
    if not known:
        return None, ""
    total = sum(known.values())
    kind = max(known, key=lambda k: known[k]) if total else "fp32"
    return total, kind


def _peak_tflops(ceil: Ceilings, kind: str) -> float:
    return {"fp64": ceil.fp64_tflops, "fp16": ceil.fp32_tflops * 2, "tensor": ceil.fp16_tflops,
            "tf32": ceil.tf32_tflops}.get(kind, ceil.fp32_tflops)


def _mean_launch(launches: list[Launch]) -> Launch:
    """One Launch whose numeric metrics are the mean over launches of the same kernel and shape."""
    if len(launches) == 1:
        return launches[0]
    base = launches[0]
    merged: dict[str, tuple[Any, str]] = {}
    for name, (value, unit) in base.metrics.items():
        vals = [l.metrics.get(name, (None, ""))[0] for l in launches]
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        merged[name] = (sum(nums) / len(nums), unit) if len(nums) == len(vals) else (value, unit)
    src = [r for l in launches for r in l.source]
    return Launch(id=base.id, name=base.name, metrics=merged, source=src)


def occupancy_limiter(l: Launch) -> str:
    limits = {
        "registers": l.num("launch__occupancy_limit_registers"),
        "shared memory": l.num("launch__occupancy_limit_shared_mem"),
        "warps (block size)": l.num("launch__occupancy_limit_warps"),
        "blocks per SM (block too small)": l.num("launch__occupancy_limit_blocks"),
        "barriers": l.num("launch__occupancy_limit_barriers"),
    }
    known = {k: v for k, v in limits.items() if v is not None}
    theo = l.num("sm__maximum_warps_per_active_cycle_pct")
    achieved = l.num("sm__warps_active.avg.pct_of_peak_sustained_active")
    waves = l.num("launch__waves_per_multiprocessor")
    parts = []
    if known:
        low = min(known.values())
        who = [k for k, v in known.items() if v == low]
        if theo is not None and theo >= 99.9:
            parts.append(f"none in theory (100%; {low:.0f} blocks/SM)")
        else:
            parts.append(f"{' & '.join(who)}: {low:.0f} blocks/SM")
    if waves is not None and waves < 1.0:
        parts.append(f"grid fills only {waves:.2f} waves of the SMs")
    elif achieved is not None and theo and achieved < 0.7 * theo:
        parts.append(f"achieved {achieved:.0f}% << theoretical {theo:.0f}% (tail/imbalance"
                     + (f", {waves:.1f} waves" if waves else "") + ")")
    return "; ".join(parts)


def digest_launches(launches: list[Launch], ceil: Ceilings, custom: set[str] | None = None,
                    max_kernels: int = 5) -> tuple[list[KernelDigest], list[str]]:
    """Group launches by kernel and shape; digests for the custom kernels (or all), names of the rest."""
    groups: dict[tuple[str, str, str], list[Launch]] = defaultdict(list)
    for l in launches:
        groups[(l.name, l.grid, l.block)].append(l)
    is_custom = (lambda n: _base_function(n) in custom) if custom else (lambda n: True)
    mine = [(k, v) for k, v in groups.items() if is_custom(k[0])]
    others = [(k, v) for k, v in groups.items() if not is_custom(k[0])]
    if not mine:
        mine, others = list(groups.items()), []
    mine.sort(key=lambda kv: -sum(l.num("gpu__time_duration.sum") or 0 for l in kv[1]))
    digests = [kernel_digest(_mean_launch(ls), ceil, launches=len(ls)) for _, ls in mine[:max_kernels]]
    other_names = []
    for (name, grid, block), ls in sorted(others, key=lambda kv: -sum(l.num("gpu__time_duration.sum") or 0
                                                                        for l in kv[1])):
        d = sum(l.num("gpu__time_duration.sum") or 0 for l in ls) / len(ls) * 1e6
        other_names.append(f"{short_kernel_name(name)} x{len(ls)} {d:.1f} us")
    for (name, _, _), ls in mine[max_kernels:]:
        other_names.append(f"{short_kernel_name(name)} x{len(ls)} (not digested)")
    return digests, other_names


def _base_function(name: str) -> str:
    short = short_kernel_name(name, limit=10_000)
    return short.split("<")[0]


def kernel_digest(l: Launch, ceil: Ceilings, launches: int = 1) -> KernelDigest:
    dur_s = l.num("gpu__time_duration.sum") or l.num("gpu__time_duration.avg")
    compute = l.num("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    memory = l.num("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    dram_pct = l.first("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                       "dram__throughput.avg.pct_of_peak_sustained_elapsed")
    bw = l.num("dram__bytes.sum.per_second")
    rd, wr = l.num("dram__bytes_read.sum"), l.num("dram__bytes_write.sum")
    dram_bytes = (rd or 0) + (wr or 0) if (rd is not None or wr is not None) else (
        bw * dur_s if bw is not None and dur_s else None)
    if bw is None and dram_bytes is not None and dur_s:
        bw = dram_bytes / dur_s
    d = KernelDigest(name=short_kernel_name(l.name), launches=launches,
                     duration_us=dur_s * 1e6 if dur_s else None, grid=l.grid, block=l.block,
                     compute_pct=compute, memory_pct=memory, dram_bytes=dram_bytes,
                     dram_gbps=bw / 1e9 if bw is not None else None,
                     l1_hit_pct=l.num("l1tex__t_sector_hit_rate.pct"), l2_hit_pct=l.num("lts__t_sector_hit_rate.pct"),
                     achieved_occupancy_pct=l.num("sm__warps_active.avg.pct_of_peak_sustained_active"),
                     theoretical_occupancy_pct=l.num("sm__maximum_warps_per_active_cycle_pct"),
                     occupancy_limiter=occupancy_limiter(l))
    regs = l.num("launch__registers_per_thread")
    d.registers_per_thread = int(regs) if regs is not None else None
    st, dy = l.num("launch__shared_mem_per_block_static"), l.num("launch__shared_mem_per_block_dynamic")
    if st is not None or dy is not None:
        d.shared_mem_bytes = int((st or 0) + (dy or 0))
    spill_inst = l.num("sass__inst_executed_register_spilling")
    spill_bytes = l.first("sass__inst_executed_register_spilling_mem_local")
    if spill_bytes is not None:
        d.spill_bytes = int(spill_bytes)
    elif spill_inst is not None:
        d.spill_bytes = 0 if spill_inst == 0 else None
    d.stalls = _top_stalls(l)
    d.tensor_pipe_pct = _tensor_pipe_pct(l)
    # roofline
    flops, kind = _flops(l)
    peak = _peak_tflops(ceil, kind) * 1e12
    if flops is not None and dram_bytes and dur_s:
        d.arithmetic_intensity = flops / dram_bytes
        attainable = min(peak, d.arithmetic_intensity * ceil.dram_gbps * 1e9)
        d.roofline_pct = 100.0 * (flops / dur_s) / attainable if attainable else None
    elif flops == 0 and dram_bytes and dur_s:
        d.arithmetic_intensity = 0.0
        d.roofline_pct = 100.0 * (dram_bytes / dur_s) / (ceil.dram_gbps * 1e9)  # pure data movement
    verdict(d, l, dram_pct, flops, kind, ceil)
    d.suggestions = suggestions(d, l, dram_pct, ceil)
    d.hot_lines = hot_lines(l.source)
    return d


def _top_stalls(l: Launch) -> list[Stall]:
    """The four main stall reasons, each with its share of all stalls."""
    stalls = {}
    for name in l.metrics:
        m = STALL_RE.match(name)
        if m and m.group(1) != "selected":
            v = l.num(name)
            if v:
                stalls[m.group(1)] = v
    total = sum(stalls.values())
    return [Stall(reason=k, share=v / total) for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:4]] \
        if total else []


def _tensor_pipe_pct(l: Launch) -> float | None:
    """The busiest tensor-pipe metric this GPU and ncu report."""
    tensor = [l.num(n) for n in ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg."
                                 "pct_of_peak_sustained_elapsed",
                                 "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active")]
    tensor = [t for t in tensor if t is not None]
    return max(tensor) if tensor else None


def verdict(d: KernelDigest, l: Launch, dram_pct: float | None, flops: float | None, kind: str,
            ceil: Ceilings | None = None) -> None:
    c, m = d.compute_pct or 0.0, d.memory_pct or 0.0
    dur = d.duration_us
    waves = l.num("launch__waves_per_multiprocessor")
    nums = f"SM {c:.0f}% / memory {m:.0f}% of peak" + (f", DRAM {dram_pct:.0f}%" if dram_pct is not None else "")
    if dur is not None and dur < 5.0:
        d.bound = "launch-bound"
        d.bound_evidence = f"{dur:.1f} us per launch: launch overhead (~2-5 us) is comparable; {nums}"
    elif m >= 60 and m >= c:
        d.bound = "memory-bound"
        where = ""
        if dram_pct is not None and dram_pct < 0.5 * m:
            where = " (in L1/L2/shared, not DRAM: data is re-read through the cache hierarchy)"
        bw = ""
        if ceil is not None and d.dram_gbps:
            bw = f"; {d.dram_gbps:.0f} GB/s = {d.dram_gbps / ceil.dram_gbps:.0%} of this GPU's {ceil.dram_gbps:.0f} GB/s"
        d.bound_evidence = f"{nums}{where}{bw}"
    elif c >= 60:
        d.bound = "compute-bound"
        pipe = f", tensor pipe {d.tensor_pipe_pct:.0f}%" if d.tensor_pipe_pct is not None else ""
        d.bound_evidence = f"{nums}{pipe}" + (f", mostly {kind} math" if kind else "")
    else:
        d.bound = "latency-bound"
        top = d.stalls[0] if d.stalls else None
        extra = f"; top stall {top.reason} {top.share:.0%}" if top else ""
        occ = (f"; occupancy {d.achieved_occupancy_pct:.0f}%" if d.achieved_occupancy_pct is not None else "")
        wv = f"; {waves:.2f} waves" if waves is not None and waves < 1 else ""
        d.bound_evidence = f"{nums}: neither unit is busy{extra}{occ}{wv}"


def suggestions(d: KernelDigest, l: Launch, dram_pct: float | None, ceil: Ceilings | None = None) -> list[Suggestion]:
    """Up to five suggestions for one kernel, best first and one per metric, from the rules in
    `_RULES`; a general one when none applies."""
    facts = _Facts(d=d, l=l, dram_pct=dram_pct, ceil=ceil, stall={s.reason: s.share for s in d.stalls},
                   m=d.memory_pct or 0, c=d.compute_pct or 0)
    cands = [found for rule in _RULES if (found := rule(facts)) is not None]
    out = _best_per_metric(cands, 5)
    if not out:
        out.append(Suggestion(rank=1, text="no single limiter stands out: compare against cuBLAS/cuDNN for this "
                                           "shape and check the algorithm's total work",
                              metric="sm__throughput.avg.pct_of_peak_sustained_elapsed",
                              value=f"{facts.c:.0f}% SM / {facts.m:.0f}% memory",
                              doc_query="CUDA kernel optimization checklist"))
    return out


@dataclass
class _Facts:
    """What the suggestion rules read about one kernel."""

    d: KernelDigest
    l: Launch
    dram_pct: float | None
    ceil: Ceilings | None
    stall: dict[str, float]  # stall reason -> share of stalls
    m: float  # memory throughput, % of peak (0 when unknown)
    c: float  # SM throughput, % of peak (0 when unknown)


_Candidate = tuple[float, Suggestion]  # (score, suggestion): the higher the score, the earlier


def _suggest(score: float, text: str, metric: str, value: str, query: str) -> _Candidate:
    return score, Suggestion(rank=0, text=text, metric=metric, value=value, doc_query=query)


def _best_per_metric(cands: list[_Candidate], most: int) -> list[Suggestion]:
    """The best-scored first (rules in their order on a tie), one per metric, ranked from 1."""
    out: list[Suggestion] = []
    seen = set()
    for _, s in sorted(cands, key=lambda sc: -sc[0]):
        if s.metric in seen:
            continue
        seen.add(s.metric)
        s.rank = len(out) + 1
        out.append(s)
        if len(out) == most:
            break
    return out


def _launch_overhead(f: _Facts) -> _Candidate | None:
    if f.d.bound == "launch-bound":
        return _suggest(9, "the kernel is only microseconds long: fuse it with its neighbours or capture the forward "
                           "in a CUDA graph", "gpu__time_duration.sum", f"{f.d.duration_us:.1f} us",
                        "CUDA graphs reduce kernel launch overhead")
    return None


def _dram_traffic(f: _Facts) -> _Candidate | None:
    """Memory-bound on DRAM: near the measured copy bandwidth, else at a busy DRAM."""
    d, ceil, dram_pct = f.d, f.ceil, f.dram_pct
    near = ceil is not None and d.dram_gbps is not None and d.dram_gbps >= 0.8 * ceil.dram_gbps
    if d.bound == "memory-bound" and near:
        return _suggest(8.2, f"already at {d.dram_gbps / ceil.dram_gbps:.0%} of this GPU's copy bandwidth: this kernel "
                             "is near its floor; only moving fewer bytes helps (fuse it with the ops before/after it, "
                             "avoid re-reading inputs, lower precision where allowed)", "dram__bytes.sum.per_second",
                        f"{d.dram_gbps:.0f} GB/s", "kernel fusion reduce global memory traffic")
    if d.bound == "memory-bound" and dram_pct is not None and dram_pct >= 60:
        return _suggest(8, "at DRAM bandwidth: move fewer bytes - fuse with producer/consumer ops, use 16-byte "
                           "vectorized loads (float4), keep intermediates in registers/shared memory, lower precision "
                           "where allowed", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                        f"{dram_pct:.0f}%", "vectorized memory access float4 global memory coalescing")
    return None


def _cache_reuse(f: _Facts) -> _Candidate | None:
    """Memory-bound in the caches, not in DRAM."""
    if f.d.bound == "memory-bound" and (f.dram_pct is None or f.dram_pct < 0.5 * f.m):
        return _suggest(8.5, "the load/store pipe is saturated while DRAM is not: the same data is fetched repeatedly "
                             "- tile it into shared memory (or registers) and reuse it across the block",
                        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", f"{f.m:.0f}%",
                        "shared memory tiling matrix multiplication data reuse")
    return None


# Stall reasons whose shares (added up) reach the threshold: score base + that share.
# (reasons, threshold, base score, advice, metric, doc query)
_STALL_RULES = (
    (("long_scoreboard",), 0.25, 7,
     "warps mostly wait on global memory loads: raise memory-level parallelism (more independent loads per thread, "
     "cp.async/TMA prefetch, double buffering) or occupancy",
     "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
     "long scoreboard stall global memory latency hiding"),
    (("lg_throttle",), 0.2, 7,
     "too many small global load/store instructions: use wider vector accesses (float4/int4) and fewer, coalesced "
     "transactions", "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
     "lg_throttle stall vectorized loads coalescing"),
    (("mio_throttle", "short_scoreboard"), 0.25, 6,
     "shared-memory pressure: check bank conflicts (pad the tile's leading dimension), use wider shared loads, or cut "
     "shared-memory round trips", "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
     "shared memory bank conflicts padding"),
    (("barrier",), 0.2, 6,
     "warps wait at __syncthreads: balance the work between barriers, use fewer barriers or warp-level primitives "
     "(__shfl_sync) for reductions", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
     "warp shuffle reduction __shfl_down_sync avoid __syncthreads"),
)


# Advice against stalls on loads (more loads in flight, wider loads) cannot take a kernel past the
# copy bandwidth: at 90% of it those stalls are the bandwidth itself. An H100 ReLU at 94% was told
# to raise its memory-level parallelism beside "near its floor; only moving fewer bytes helps".
_LOAD_STALLS = {"long_scoreboard", "lg_throttle"}
AT_COPY_FLOOR = 0.9


def _stall_rule(row: tuple, f: _Facts) -> _Candidate | None:
    reasons, threshold, base, text, metric, query = row
    at_floor = f.ceil is not None and f.d.dram_gbps is not None and f.d.dram_gbps >= AT_COPY_FLOOR * f.ceil.dram_gbps
    if at_floor and set(reasons) <= _LOAD_STALLS:
        return None
    share = sum(f.stall.get(r, 0) for r in reasons)
    if share >= threshold:
        return _suggest(base + share, text, metric, f"{share:.0%} of stalls", query)
    return None


def _tensor_cores(f: _Facts) -> _Candidate | None:
    """Math on the CUDA cores while the tensor cores idle."""
    d = f.d
    fma = f.l.num("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active") or 0
    if (d.bound == "compute-bound" or fma >= 40 or f.stall.get("math_pipe_throttle", 0) >= 0.2) and \
            (d.tensor_pipe_pct or 0) < 5:
        return _suggest(7.5, "FP32 math on CUDA cores while the tensor cores idle: for fp32 work keep fp32 accuracy on "
                             "the tensor cores with 3xTF32 (each operand split into a TF32 high and low part, three "
                             "MMAs; CUTLASS's OpMultiplyAddFastF32) - plain TF32 or BF16 is a precision downgrade an "
                             "fp32 task's tolerance usually rejects; half-precision tasks use BF16/FP16 MMA "
                             "(WMMA/mma.sync, cuBLAS)",
                        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                        f"{d.tensor_pipe_pct or 0:.1f}%", "3xTF32 fp32-accurate tensor core GEMM mma.sync")
    return None


def _occupancy_limit(f: _Facts) -> _Candidate | None:
    """A low theoretical occupancy, by what limits it."""
    d = f.d
    theo, lim = d.theoretical_occupancy_pct, d.occupancy_limiter
    if theo is not None and theo < 50 and d.bound in ("latency-bound", "memory-bound"):
        if lim.startswith("registers"):
            return _suggest(6.5, f"occupancy capped at {theo:.0f}% by {d.registers_per_thread} registers/thread: use "
                                 "__launch_bounds__(threads, minBlocks) or -maxrregcount, or hold less state per "
                                 "thread",
                            "launch__occupancy_limit_registers", lim, "__launch_bounds__ register usage occupancy")
        if lim.startswith("shared"):
            return _suggest(6.5, f"occupancy capped at {theo:.0f}% by shared memory ({d.shared_mem_bytes} B/block): "
                                 "smaller tiles or fewer pipeline stages",
                            "launch__occupancy_limit_shared_mem", lim, "shared memory per block occupancy")
        if "block" in lim:
            return _suggest(6.5, f"occupancy capped at {theo:.0f}% by the block size ({d.block}): use 128-512 threads "
                                 "per block", "launch__occupancy_limit_blocks", lim, "choosing block size occupancy")
    return None


def _waves(f: _Facts) -> _Candidate | None:
    """A grid too small to fill the SMs, else (latency-bound) an achieved occupancy well below the theoretical."""
    d = f.d
    theo, ach = d.theoretical_occupancy_pct, d.achieved_occupancy_pct
    waves = f.l.num("launch__waves_per_multiprocessor")
    if waves is not None and waves < 1.0 and d.bound != "launch-bound":
        return _suggest(6.8, f"the grid ({d.grid}) fills only {waves:.2f} waves of the SMs: launch more, smaller "
                             "blocks (or split-K / split the reduction) so every SM has work",
                        "launch__waves_per_multiprocessor", f"{waves:.2f}", "grid size waves tail effect occupancy")
    if ach is not None and theo and ach < 0.6 * theo and d.bound == "latency-bound":
        return _suggest(5, f"achieved occupancy {ach:.0f}% vs theoretical {theo:.0f}%: load imbalance or a tail wave",
                        "sm__warps_active.avg.pct_of_peak_sustained_active", f"{ach:.0f}%",
                        "achieved occupancy tail effect")
    return None


def _spills(f: _Facts) -> _Candidate | None:
    spills = f.l.num("sass__inst_executed_register_spilling")
    if spills:
        return _suggest(6.2, "registers spill to local memory: reduce live state per thread or unroll less",
                        "sass__inst_executed_register_spilling", f"{spills:.0f} inst", "register spilling local memory")
    return None


def _l2_locality(f: _Facts) -> _Candidate | None:
    d = f.d
    if d.l2_hit_pct is not None and d.l2_hit_pct < 50 and (f.dram_pct or 0) >= 40 and \
            (d.arithmetic_intensity or 0) > 1.0:
        return _suggest(5.5, "low L2 hit rate with busy DRAM: improve locality (block swizzle/rasterization, tile "
                             "order)", "lts__t_sector_hit_rate.pct", f"{d.l2_hit_pct:.0f}%",
                        "L2 cache locality threadblock swizzle")
    return None


# The rules in order: on equal scores the earlier rule's suggestion comes first.
_RULES: tuple[Callable[[_Facts], _Candidate | None], ...] = (
    _launch_overhead, _dram_traffic, _cache_reuse, *(partial(_stall_rule, row) for row in _STALL_RULES),
    _tensor_cores, _occupancy_limit, _waves, _spills, _l2_locality,
)


def hot_lines(source: list[dict[str, Any]], top: int = 5) -> list[HotLine]:
    if not source:
        return []
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for r in source:
        key = (r.get("file", ""), int(r.get("line") or 0))
        m = merged.setdefault(key, {"text": r.get("text", ""), "counts": defaultdict(float)})
        for k, v in (r.get("counts") or {}).items():
            m["counts"][k] += float(v)
    total = sum(m["counts"].get("samples", 0) for m in merged.values()) or \
        sum(sum(v for k, v in m["counts"].items()) for m in merged.values()) or 1.0
    rows = []
    for (fname, line), m in merged.items():
        counts = dict(m["counts"])
        samples = counts.pop("samples", None)
        if samples is None:
            samples = sum(counts.values())
        stall = max(counts, key=lambda k: counts[k]) if counts else ""
        rows.append(HotLine(line=line if fname != "<sass>" else None,
                            source=(m["text"] or "")[:160] if fname != "<sass>" else f"SASS @0x{line:x}: {m['text']}"[:160],
                            share=samples / total, top_stall=stall))
    rows.sort(key=lambda h: -h.share)
    return rows[:top]


# ------------------------------------------------------------------ running ncu


def find_ncu() -> str | None:
    from stitch_mcp.cuda_tools import find_tool

    return find_tool("ncu")


def report_python_dirs(ncu: str | None) -> list[str]:
    """Folders holding ncu_report.py for this ncu (newest install first)."""
    dirs = []
    if ncu:
        real = Path(os.path.realpath(ncu))
        for base in (real.parent, real.parent.parent):
            cand = base / "extras" / "python"
            if (cand / "ncu_report.py").exists():
                dirs.append(str(cand))
        if not dirs:
            for root in (real.parent.parent,):
                for g in sorted(glob.glob(str(root / "nsight-compute*" / "extras" / "python")), reverse=True):
                    dirs.append(g)
    for g in sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True) + \
            sorted(glob.glob("/usr/local/cuda*/nsight-compute*/extras/python"), reverse=True):
        if g not in dirs and Path(g, "ncu_report.py").exists():
            dirs.append(g)
    return dirs


def kernel_filter_arg(kernel_filter: str | None) -> str | None:
    if not kernel_filter:
        return None
    if kernel_filter.startswith("regex:"):
        pattern = kernel_filter[len("regex:"):]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UserError(f"kernel_filter: bad regular expression {pattern!r}: {exc}") from None
        return kernel_filter
    return "regex:" + re.escape(kernel_filter)


def ncu_command(ncu: str, sections: str, out_base: Path, driver_cmd: list[str], *, kernel_filter: str | None,
                launch_skip: int, launch_count: int, clock_control: str, extra_metrics: bool = True) -> list[str]:
    if sections not in SECTIONS:
        raise UserError(f"sections: unknown preset {sections!r}; use one of {', '.join(SECTIONS)}")
    cmd = [ncu, "--clock-control", clock_control, "--target-processes", "application-only",
           "--profile-from-start", "off", "-f", "-o", str(out_base)]
    if sections == "full":
        cmd += ["--set", "full"]
    else:
        for s in SECTIONS[sections]:
            cmd += ["--section", s]
    if extra_metrics:
        cmd += ["--metrics", ",".join(EXTRA_METRICS)]
    if kernel_filter:
        cmd += ["-k", kernel_filter]
    if launch_skip:
        cmd += ["--launch-skip", str(launch_skip)]
    cmd += ["--launch-count", str(launch_count)]
    return cmd + driver_cmd


def classify_failure(output: str) -> str | None:
    """A user-facing reason when ncu's own output explains a failure."""
    if "ERR_NVGPUCTRPERM" in output:
        return PERM_HELP
    if "No kernels were profiled" in output:
        return "no kernels matched"
    return None


def unknown_metric(output: str) -> bool:
    low = output.lower()
    return ("failed to find metric" in low or "invalid metric" in low or "unknown metric" in low
            or ("metric" in low and "not found" in low))


def which_ncu_missing_message() -> str:
    return ("ncu (Nsight Compute) was not found on PATH or under CUDA_HOME/bin: install the CUDA toolkit's "
            "Nsight Compute or add it to PATH; profile_kernel needs it (profile_reference does not)")


def has_ncu() -> bool:
    return find_ncu() is not None or shutil.which("ncu") is not None
