"""Pictures for the human watching: a timeline of one reference iteration and a roofline of a
candidate's kernels. matplotlib is imported lazily with the Agg backend (no display needed)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from stitch_mcp.models import KernelDigest
from stitch_mcp.profiling.names import op_base, short_kernel_name
from stitch_mcp.ceilings import Ceilings
from stitch_mcp.profiling.trace import Trace

log = logging.getLogger(__name__)


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def artifact_name(prefix: str, key: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", key)[:60]
    return f"{prefix}-{safe}.png"


def legend_order(names: list[str], ops, kernels, t0: float, gpu_t0: float, limit: int = 12) -> list[tuple[str, float]]:
    """The ops worth a legend entry (the `limit` longest), ordered as their bars first appear from the
    left (host ops from the iteration's start, kernels from the first GPU event), with their total ms."""
    first: dict[str, float] = {}
    total: dict[str, float] = {n: 0.0 for n in names}
    for o in ops:
        n = op_base(o.name)
        first[n] = min(first.get(n, float("inf")), o.start - t0)
        total[n] += o.end - o.start
    for k in kernels:
        n = op_base(k.op) if k.op else "(no op)"
        first[n] = min(first.get(n, float("inf")), k.start - gpu_t0)
        if not ops:
            total[n] += k.dur
    if ops and kernels:  # on a GPU the kernels' time is what counts
        total = {n: 0.0 for n in names}
        for k in kernels:
            total[op_base(k.op) if k.op else "(no op)"] += k.dur
    top = sorted(names, key=lambda n: -total.get(n, 0.0))[:limit]
    return [(n, total[n] / 1e6) for n in sorted(top, key=lambda n: first.get(n, float("inf")))]


def _legend(plt, names, color, ops, kernels, t0, gpu_t0):
    order = legend_order(names, ops, kernels, t0, gpu_t0)
    labels = [f"{n.replace('aten::', '')[:24]} {ms:.2f} ms" for n, ms in order]
    return labels, [plt.Rectangle((0, 0), 1, 1, color=color[n]) for n, _ in order]


def timeline_png(trace: Trace, path: Path, title: str = "") -> Path | None:
    """Kernels (GPU streams) and top-level ops (host) of one iteration, colored by op."""
    if not trace.iterations:
        return None
    it = min(1, len(trace.iterations) - 1)  # the second iteration: past one-time work
    t0, t1 = trace.iterations[it]
    ops = sorted([o for o in trace.ops if o.iteration == it], key=lambda o: o.start)
    kernels = [k for k in trace.kernels if k.iteration == it]
    copies = [c for c in trace.copies if c.iteration == it]
    if not ops and not kernels:
        return None
    plt = _plt()
    gpu_t0 = min([k.start for k in kernels] + [c.start for c in copies], default=t0)
    names = []
    for o in ops:
        n = op_base(o.name)
        if n not in names:
            names.append(n)
    for k in kernels:
        n = op_base(k.op) if k.op else "(no op)"
        if n not in names:
            names.append(n)
    cmap = plt.get_cmap("tab20")
    color = {n: cmap(i % 20) for i, n in enumerate(names)}
    streams = sorted({k.stream for k in kernels})
    lanes = ["host ops"] + [f"GPU stream {s}" for s in streams] + (["copies"] if copies else [])
    fig, ax = plt.subplots(figsize=(13, max(2.6, 1.4 + 0.6 * len(lanes))), dpi=100)
    for o in ops:
        n = op_base(o.name)
        ax.barh(0, (o.end - o.start) / 1e6, left=(o.start - t0) / 1e6, height=0.6, color=color[n],
                edgecolor="black", linewidth=0.3)
    for k in kernels:
        n = op_base(k.op) if k.op else "(no op)"
        y = 1 + streams.index(k.stream)
        ax.barh(y, max(k.dur, 1.0) / 1e6, left=(k.start - gpu_t0) / 1e6, height=0.6, color=color[n],
                edgecolor="black", linewidth=0.3)
    for c in copies:
        ax.barh(len(lanes) - 1, c.dur / 1e6, left=(c.start - gpu_t0) / 1e6, height=0.6, color="grey")
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.invert_yaxis()
    on_gpu = bool(kernels or copies)
    ax.set_xlabel("ms from the start of the iteration" + (" (GPU lanes from the first GPU event)" if on_gpu else
                                                          " (host time: no GPU here)"))
    labels, handles = _legend(plt, names, color, ops, kernels, t0, gpu_t0)
    ax.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5),
              ncol=1 if len(labels) <= 6 else 2, fontsize=8, frameon=False,
              title="ops, in the order they first appear", title_fontsize=8)
    ax.set_title(title or f"one iteration ({trace.backend}, {trace.device})", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def roofline_png(kernels: list[KernelDigest], ceil: Ceilings, path: Path, title: str = "") -> Path | None:
    """Kernels on this GPU's roofline (FLOP/byte vs GFLOP/s); without FLOP counters, a
    speed-of-light chart (memory % vs compute % of peak) instead."""
    if not kernels:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=100)
    with_ai = [k for k in kernels if k.arithmetic_intensity and k.duration_us]
    if with_ai:
        import math

        lo = min(0.01, min(k.arithmetic_intensity for k in with_ai) / 2)
        hi = max(1e4, max(k.arithmetic_intensity for k in with_ai) * 2)
        xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        bw = ceil.dram_gbps  # GB/s -> GFLOP/s per FLOP/B
        for peak, label, style in ((ceil.fp32_tflops, "FP32", "-"), (ceil.fp16_tflops, "tensor BF16/FP16", "--")):
            ys = [min(peak * 1e3, x * bw) for x in xs]
            ax.plot(xs, ys, style, color="black", linewidth=1)
            ax.text(hi / 1.5, peak * 1e3 * 1.1, f"{label} {peak:.0f} TFLOP/s", ha="right", fontsize=8)
        ax.text(lo * 1.5, lo * 1.5 * bw * 1.4, f"DRAM {bw / 1e3:.1f} TB/s", rotation=0, fontsize=8)
        for k in with_ai:
            flops = k.arithmetic_intensity * (k.dram_bytes or 0)
            gflops = flops / (k.duration_us * 1e-6) / 1e9
            ax.scatter([k.arithmetic_intensity], [max(gflops, 1e-3)], s=60, zorder=3)
            pct = f" {k.roofline_pct:.0f}%" if k.roofline_pct is not None else ""
            ax.annotate(f"{k.name}{pct}", (k.arithmetic_intensity, max(gflops, 1e-3)), textcoords="offset points",
                        xytext=(6, 4), fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
        ax.set_ylabel("achieved GFLOP/s")
        ax.set_ylim(bottom=max(1e-3, min((k.arithmetic_intensity * (k.dram_bytes or 0)) / (k.duration_us * 1e-6) / 1e9
                                             for k in with_ai) / 10))
        _ = math
    else:
        for k in kernels:
            ax.scatter([k.memory_pct or 0], [k.compute_pct or 0], s=60, zorder=3)
            ax.annotate(f"{k.name} ({k.bound or '?'})", (k.memory_pct or 0, k.compute_pct or 0),
                        textcoords="offset points", xytext=(6, 4), fontsize=8)
        ax.plot([0, 100], [0, 100], ":", color="grey")
        ax.axvline(60, color="grey", linewidth=0.5)
        ax.axhline(60, color="grey", linewidth=0.5)
        ax.set_xlim(0, 105)
        ax.set_ylim(0, 105)
        ax.set_xlabel("memory throughput, % of peak")
        ax.set_ylabel("compute (SM) throughput, % of peak")
    ax.set_title(title or f"kernels on {ceil.name}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def kernel_label(name: str) -> str:
    return short_kernel_name(name, 40)
