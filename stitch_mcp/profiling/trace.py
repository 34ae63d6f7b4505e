"""A profiler-neutral trace of a few iterations of a reference program, and its digest.

Both back ends (Nsight Systems' SQLite export and torch.profiler's Chrome trace) are parsed into
`Trace`; `digest()` turns a Trace into the ReferenceProfile the Planner reads. Times are in ns.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from stitch_mcp.models import Evidence, Finding, KernelRow, OpRow, ReferenceProfile
from stitch_mcp.profiling.names import op_base, op_key, short_kernel_name
from stitch_mcp.ceilings import Ceilings, describe


@dataclass
class Op:
    name: str
    start: float
    end: float
    iteration: int


@dataclass
class Kernel:
    name: str
    start: float
    end: float
    op: str = ""
    iteration: int = -1
    grid: str = ""
    block: str = ""
    stream: int = 0

    @property
    def dur(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class Copy:
    kind: str  # memcpy HtoD/DtoH/DtoD/..., or memset
    start: float
    end: float
    nbytes: int = 0
    op: str = ""
    iteration: int = -1

    @property
    def dur(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class Trace:
    backend: str
    device: str = ""
    on_gpu: bool = True
    iterations: list[tuple[float, float]] = field(default_factory=list)  # host (start, end) per iteration
    ops: list[Op] = field(default_factory=list)  # top-level ops inside iterations
    kernels: list[Kernel] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    launches: int = 0  # kernel-launch API calls inside iterations
    notes: list[str] = field(default_factory=list)

    def iteration_of(self, t: float) -> int:
        for i, (s, e) in enumerate(self.iterations):
            if s <= t <= e:
                return i
        return -1


# ops that read and write every element once and are cheap per element: fusion material
ELEMENTWISE = {
    "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "mish", "elu",
    "selu", "leaky_relu", "softplus", "add", "sub", "mul", "div", "rsub", "neg", "exp", "log", "sqrt", "rsqrt",
    "pow", "abs", "clamp", "clamp_min", "clamp_max", "clip", "where", "minimum", "maximum", "dropout",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "softmax", "log_softmax", "square",
    "addcmul", "erf", "masked_fill", "threshold", "fill", "zero",
}
HEAVY = {
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
    "linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "scaled_dot_product_attention", "lstm", "gru",
    "rnn_tanh", "rnn_relu", "embedding", "cudnn_convolution",
}
COPY_OPS = {"contiguous", "clone", "copy", "to", "_to_copy", "cat", "stack", "repeat", "expand_as", "index",
            "permute_copy", "transpose_copy", "pad", "constant_pad_nd", "type_as"}


def _union_ns(intervals: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def _si(x: float) -> str:
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= div:
            return f"{x / div:.1f} {unit}"
    return f"{x:.0f} "


def _fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms * 1e3:.1f} us"


def digest(trace: Trace, ceilings: Ceilings, costs: dict[str, dict[str, Any]] | None = None,
           wall_ms: list[float] | None = None, max_ops: int = 15, max_kernels: int = 15) -> ReferenceProfile:
    n = max(1, len(trace.iterations))
    costs = costs or {}
    gpu = trace.on_gpu
    # -- per-iteration totals
    kern_ms = sum(k.dur for k in trace.kernels) / 1e6 / n
    memcpy = [c for c in trace.copies if c.kind != "memset"]
    memset = [c for c in trace.copies if c.kind == "memset"]
    busy = _union_ns([(k.start, k.end) for k in trace.kernels] + [(c.start, c.end) for c in trace.copies])
    traced_wall = sum(e - s for s, e in trace.iterations) / 1e6 / n if trace.iterations else None
    wall = (sorted(wall_ms)[len(wall_ms) // 2] if wall_ms else traced_wall)
    gpu_ms = (busy / 1e6 / n) if gpu else None
    idle = None
    if gpu and wall:
        idle = max(0.0, min(1.0, 1.0 - (gpu_ms or 0.0) / wall))
    launches = (trace.launches or len(trace.kernels)) / n if gpu else None
    times = _op_times(trace)
    total_ms = sum(times.ms.values()) or 1e-12
    rows = _op_rows(times, total_ms, n, ceilings, costs)
    krows = _kernel_rows(trace, n)
    prof = ReferenceProfile(
        backend=trace.backend, device=trace.device, iterations=n, wall_ms_per_iter=wall, gpu_ms_per_iter=gpu_ms,
        gpu_idle_fraction=idle, launches_per_iter=launches,
        memcpy_ms_per_iter=sum(c.dur for c in memcpy) / 1e6 / n, memset_ms_per_iter=sum(c.dur for c in memset) / 1e6 / n,
        memcpy_bytes_per_iter=int(sum(c.nbytes for c in memcpy) / n),
        ops=rows[:max_ops], kernels=krows[:max_kernels], notes=list(trace.notes) + list(ceilings.notes))
    if not gpu:
        prof.notes.insert(0, "no GPU here: profiled on the CPU; op times are host (CPU) times, there are no "
                             "kernels; run on a GPU machine for the real picture")
    if len(rows) > max_ops:
        prof.notes.append(f"{len(rows) - max_ops} more ops not shown")
    if len(krows) > max_kernels:
        prof.notes.append(f"{len(krows) - max_kernels} more kernel kinds not shown")
    why = _sum_vs_wall(total_ms / n if times.ms else None, wall, traced_wall, gpu_ms, gpu)
    if why:
        prof.notes.append(why)
    prof.findings = findings(trace, prof, rows, kern_ms)
    prof.summary = summary_text(prof, ceilings)
    return prof


@dataclass
class _OpTimes:
    """Per op (base name), over all iterations: its time in ms, calls, kernel launches, and ns per
    kernel (short name) or copy kind."""

    ms: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    kernel_count: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    kernels: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))


def _op_times(trace: Trace) -> _OpTimes:
    """Ops' GPU time from their kernels and copies (GPU), or their host time (CPU)."""
    times = _OpTimes()
    gpu = trace.on_gpu
    for o in trace.ops:
        times.calls[op_base(o.name)] += 1
        if not gpu:
            times.ms[op_base(o.name)] += (o.end - o.start) / 1e6
    if gpu:
        for k in trace.kernels:
            name = op_base(k.op) if k.op else "(no op)"
            times.ms[name] += k.dur / 1e6
            times.kernel_count[name] += 1
            times.kernels[name][short_kernel_name(k.name)] += k.dur
        for c in trace.copies:
            name = op_base(c.op) if c.op else "(no op)"
            times.ms[name] += c.dur / 1e6
            times.kernels[name][c.kind] += c.dur
    return times


def _op_rows(times: _OpTimes, total_ms: float, n: int, ceilings: Ceilings,
             costs: dict[str, dict[str, Any]]) -> list[OpRow]:
    """One row per op, the most time first, with its cost (FLOPs, bytes) and floor where known."""
    rows: list[OpRow] = []
    for name, ms in sorted(times.ms.items(), key=lambda kv: -kv[1]):
        c = costs.get(op_key(name))
        flops = c["flops"] if c else None
        nbytes = c["bytes"] if c else None
        intensity = (flops / nbytes) if (c and nbytes) else None
        floor = ceilings.floor_ms(flops, nbytes, c.get("dtype") if c else None) if c else None
        kern = sorted(times.kernels[name].items(), key=lambda kv: -kv[1])
        rows.append(OpRow(name=name, gpu_ms=ms / n, share=ms / total_ms, calls=round(times.calls.get(name, 0) / n),
                          kernel_count=round(times.kernel_count.get(name, 0) / n), kernels=[k for k, _ in kern[:3]],
                          flops=flops if c else None, bytes=nbytes if c else None,
                          intensity=intensity, floor_ms=floor, dtype=c.get("dtype") if c else None))
    return rows


def _kernel_rows(trace: Trace, n: int) -> list[KernelRow]:
    """One row per kernel (short name, grid, block), the most time first."""
    kgroups: dict[tuple[str, str, str], list[Kernel]] = defaultdict(list)
    for k in trace.kernels:
        kgroups[(short_kernel_name(k.name), k.grid, k.block)].append(k)
    ktotal = sum(k.dur for k in trace.kernels) or 1e-12
    krows = []
    for (name, grid, block), ks in sorted(kgroups.items(), key=lambda kv: -sum(k.dur for k in kv[1])):
        dur = sum(k.dur for k in ks)
        ops = sorted({op_base(k.op) for k in ks if k.op})
        krows.append(KernelRow(name=name, op=", ".join(ops[:2]), grid=grid, block=block,
                               calls=max(1, round(len(ks) / n)), duration_ms=dur / 1e6 / n, share=dur / ktotal))
    return krows


def _sum_vs_wall(op_total: float | None, wall: float | None, traced_wall: float | None, gpu_ms: float | None,
                 gpu: bool) -> str | None:
    """Why the ops' times add to more than the wall time per iteration, when they do."""
    if not op_total or not wall or op_total <= 1.1 * wall:
        return None
    head = f"the ops' times add to {_fmt_ms(op_total)}/iter, more than the wall {_fmt_ms(wall)}/iter (timed " \
           "without the profiler)"
    if gpu and gpu_ms is not None and op_total > 1.1 * gpu_ms:
        return (f"{head}: kernels of different ops ran at the same time on several streams, so their durations "
                f"overlap; the GPU was busy {_fmt_ms(gpu_ms)}/iter (the union)")
    if traced_wall and traced_wall > 1.1 * wall:
        return (f"{head}: they were measured under the profiler, whose per-op overhead stretched each profiled "
                f"iteration to {_fmt_ms(traced_wall)}; compare shares, not milliseconds, with the wall")
    return f"{head}: work of different ops overlapped (several threads or streams)"


def _ops_in_order(trace: Trace, iteration: int) -> list[Op]:
    return sorted([o for o in trace.ops if o.iteration == iteration], key=lambda o: o.start)


def findings(trace: Trace, prof: ReferenceProfile, rows: list[OpRow], kern_ms: float) -> list[Finding]:
    out = _fusion_findings(trace, rows)
    out += _launch_findings(prof)
    out += _copy_findings(trace, prof, rows)
    out += _floor_findings(trace, rows)
    return out[:8]


def _fusion_chains(ops: list[Op]) -> list[list[Op]]:
    """Runs of consecutive elementwise/normalization ops: two or more, or one after a heavy op."""
    chains: list[list[Op]] = []
    cur: list[Op] = []
    for o in ops:
        k = op_key(o.name)
        if k in ELEMENTWISE:
            cur.append(o)
        elif k in ("view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t", "expand",
                   "size", "detach", "alias", "empty", "empty_like"):
            continue  # free ops do not break a chain
        else:
            if len(cur) >= 2 or (cur and k in HEAVY and len(cur) >= 1 and _prev_heavy(ops, cur[0])):
                chains.append(cur)
            cur = []
    if len(cur) >= 2 or (cur and _prev_heavy(ops, cur[0])):
        chains.append(cur)
    return chains


def _fusion_findings(trace: Trace, rows: list[OpRow]) -> list[Finding]:
    """1. fusion chains: consecutive elementwise/normalization ops (per iteration 0, or the first with ops)."""
    out: list[Finding] = []
    by_name = {r.name: r for r in rows}
    iters = sorted({o.iteration for o in trace.ops if o.iteration >= 0})
    ops = _ops_in_order(trace, iters[0]) if iters else []
    for chain in sorted(_fusion_chains(ops), key=lambda c: -_chain_ms(c, by_name))[:3]:
        names = [op_base(o.name).split("::")[-1] for o in chain]
        prev = _prev_heavy(ops, chain[0])
        ms = _chain_ms(chain, by_name)
        where = f" after {op_base(prev.name).split('::')[-1]}" if prev else ""
        out.append(Finding(
            code="fusion_candidate", severity="info", confidence="probable",
            message=f"fuse {' -> '.join(names)}{where} into one kernel"
                    + (f" (epilogue of {op_base(prev.name).split('::')[-1]})" if prev else "")
                    + (f": ~{_fmt_ms(ms)} of {'GPU' if trace.on_gpu else 'CPU'} time now, each op re-reads and "
                       "re-writes the tensor" if ms else ""),
            evidence=[Evidence(file="profile", text=" -> ".join(names))], doc_id=None))
    return out


def _launch_findings(prof: ReferenceProfile) -> list[Finding]:
    """2. launch overhead / host gaps."""
    if not (prof.gpu_idle_fraction is not None and prof.gpu_idle_fraction > 0.3 and prof.wall_ms_per_iter):
        return []
    per_launch = (prof.gpu_ms_per_iter or 0) / max(1.0, prof.launches_per_iter or 1)
    launch_bound = per_launch < 0.02 and (prof.launches_per_iter or 0) >= 5
    why = ("launch overhead dominates: fuse ops to cut launches or capture the forward in a CUDA graph"
           if launch_bound else "the GPU waits on the host (host work, synchronizations, copies): keep the "
                                "forward on the GPU and avoid syncs")
    return [Finding(
        code="launch_bound" if launch_bound else "host_gaps",
        severity="warning", confidence="probable",
        message=f"GPU idle {prof.gpu_idle_fraction:.0%} of each iteration ({prof.launches_per_iter:.0f} launches, "
                f"{_fmt_ms(per_launch)} GPU work per launch): {why}",
        evidence=[Evidence(file="profile", text=f"wall {_fmt_ms(prof.wall_ms_per_iter)}, GPU busy "
                                                f"{_fmt_ms(prof.gpu_ms_per_iter)}")])]


def _copy_findings(trace: Trace, prof: ReferenceProfile, rows: list[OpRow]) -> list[Finding]:
    """3. copies that could be avoided."""
    out: list[Finding] = []
    if prof.memcpy_bytes_per_iter > 0:
        kinds = sorted({c.kind for c in trace.copies if c.kind != "memset"})
        out.append(Finding(code="avoidable_copy", severity="warning", confidence="possible",
                           message=f"{prof.memcpy_bytes_per_iter / 1e6:.1f} MB copied per iteration ({', '.join(kinds)}, "
                                   f"{_fmt_ms(prof.memcpy_ms_per_iter)}): keep data on the GPU / compute in place"))
    for r in rows:
        if op_key(r.name) in COPY_OPS and r.share > 0.03:
            out.append(Finding(code="avoidable_copy", severity="info", confidence="possible",
                               message=f"{r.name} takes {r.share:.0%} ({_fmt_ms(r.gpu_ms)}): a layout copy a fused "
                                       "kernel could avoid by reading the strided input directly"))
    return out


def _floor_findings(trace: Trace, rows: list[OpRow]) -> list[Finding]:
    """4. far from floor (GPU only: a CPU run says nothing about the GPU's floor)."""
    out: list[Finding] = []
    for r in (rows if trace.on_gpu else []):
        if r.floor_ms and r.gpu_ms > 0 and r.share >= 0.05 and r.gpu_ms > 3 * r.floor_ms:
            out.append(Finding(code="far_from_floor", severity="info", confidence="probable",
                               message=f"{r.name}: {_fmt_ms(r.gpu_ms)} vs floor {_fmt_ms(r.floor_ms)} "
                                       f"({r.gpu_ms / r.floor_ms:.0f}x; intensity {r.intensity or 0:.1f} FLOP/B): "
                                       "room for a better kernel"))
    return out


def _prev_heavy(ops: list[Op], first: Op) -> Op | None:
    idx = ops.index(first)
    for o in reversed(ops[:idx]):
        k = op_key(o.name)
        if k in HEAVY:
            return o
        if k in ELEMENTWISE:
            continue
        if k in ("view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t", "expand"):
            continue
        return None
    return None


def _chain_ms(chain: list[Op], by_name: dict[str, OpRow]) -> float:
    # per-call share of each op's per-iteration time
    total = 0.0
    for o in chain:
        r = by_name.get(op_base(o.name))
        if r and r.calls:
            total += r.gpu_ms / r.calls
    return total


def summary_text(p: ReferenceProfile, ceilings: Ceilings, max_chars: int = 6000) -> str:
    lines = []
    where = "GPU" if p.gpu_ms_per_iter is not None else "CPU"
    lines.append(f"profile_reference [{p.backend}] on {p.device or '?'}: {p.iterations} iterations")
    head = f"wall {_fmt_ms(p.wall_ms_per_iter)}/iter"
    if p.gpu_ms_per_iter is not None:
        head += (f", GPU busy {_fmt_ms(p.gpu_ms_per_iter)}/iter, idle {p.gpu_idle_fraction:.0%}, "
                 f"{p.launches_per_iter:.0f} launches/iter")
        if p.memcpy_bytes_per_iter or p.memset_ms_per_iter:
            head += (f", memcpy {p.memcpy_bytes_per_iter / 1e6:.1f} MB ({_fmt_ms(p.memcpy_ms_per_iter)}), "
                     f"memset {_fmt_ms(p.memset_ms_per_iter)}")
    lines.append(head)
    lines.append(f"ceilings: {describe(ceilings)}; floor = max(bytes / bandwidth, FLOPs / peak of the op's dtype, "
                 "fp32 on the CUDA cores as TF32 is off)")
    lines.append(f"ops by {where} time/iter (share, calls, kernels | FLOPs, bytes, FLOP/B, floor):")
    for r in p.ops[:12]:
        extra = ""
        if r.bytes is not None:
            extra = (f" | {_si(r.flops or 0)}FLOP {_si(r.bytes)}B"
                     f" {r.intensity or 0:.1f} F/B floor {_fmt_ms(r.floor_ms)}")
        ks = f" [{', '.join(r.kernels[:2])}]" if r.kernels else ""
        lines.append(f"  {r.name}: {_fmt_ms(r.gpu_ms)} {r.share:.0%} x{r.calls} k{r.kernel_count}{extra}{ks}")
    if p.kernels:
        lines.append("top kernels (time/iter, share, grid x block):")
        for k in p.kernels[:8]:
            lines.append(f"  {k.name} [{k.op or '-'}]: {_fmt_ms(k.duration_ms)} {k.share:.0%} x{k.calls} "
                         f"{k.grid} x {k.block}")
    if p.findings:
        lines.append("findings:")
        for f in p.findings:
            lines.append(f"  - [{f.code}] {f.message}")
    for note in p.notes:
        lines.append(f"note: {note}")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 20] + "\n... (truncated)"
