"""torch.profiler back end: parse the Chrome trace that `export_chrome_trace` writes into a Trace.

Event categories used (Kineto): `user_annotation` (our stitch_iter_N ranges), `cpu_op` (aten ops,
with `External id`), `cuda_runtime`/`cuda_driver` (launch calls, with `correlation`), `kernel`,
`gpu_memcpy`, `gpu_memset` (with `correlation`, `External id`, grid/block, bytes). Timestamps in µs.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from stitch_mcp.profiling.driver import ITER_PREFIX
from stitch_mcp.profiling.trace import Copy, Kernel, Op, Trace

LAUNCH_NAMES = ("LaunchKernel", "cuLaunch", "LaunchCooperativeKernel", "GraphLaunch")


def _dim3(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "(" + ",".join(str(int(x)) for x in v) + ")"
    return str(v or "")


def _memcpy_kind(name: str) -> str:
    for kind in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD"):
        if kind in name:
            return kind
    return "memcpy"


class _TopLevel:
    """Top-level ops per thread, for finding the op that encloses a host timestamp."""

    def __init__(self, ops: list[tuple[Any, Op]]):
        self.by_tid: dict[Any, list[Op]] = defaultdict(list)
        for tid, op in ops:
            self.by_tid[tid].append(op)
        self.starts = {}
        for tid, lst in self.by_tid.items():
            lst.sort(key=lambda o: o.start)
            self.starts[tid] = [o.start for o in lst]

    def at(self, tid: Any, t: float) -> Op | None:
        candidates = [tid] if tid in self.by_tid else list(self.by_tid)
        for tid_ in candidates:
            lst = self.by_tid[tid_]
            i = bisect.bisect_right(self.starts[tid_], t) - 1
            if i >= 0 and lst[i].start <= t <= lst[i].end:
                return lst[i]
        return None


def parse_chrome_trace(data: dict | str | Path, device: str = "", on_gpu: bool | None = None) -> Trace:
    if not isinstance(data, dict):
        data = json.loads(Path(data).read_text())
    events = [e for e in data.get("traceEvents", []) if e.get("ph") == "X"]
    iters = sorted((_span(e) for e in events
                    if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(ITER_PREFIX)))
    kernels_ev = [e for e in events if e.get("cat") == "kernel"]
    if on_gpu is None:
        on_gpu = bool(kernels_ev) or any(e.get("cat") == "cuda_runtime" for e in events)
    trace = Trace(backend="torch", device=device, on_gpu=on_gpu, iterations=iters)
    if not iters:
        trace.notes.append("no iteration ranges found in the trace; treating the whole trace as one iteration")
        if events:
            trace.iterations = [(min(_span(e)[0] for e in events), max(_span(e)[1] for e in events))]
    top_of_ext, top_ops = _take_cpu_ops(trace, events)
    finder = _TopLevel(top_ops)
    runtime = _launch_calls(trace, events)
    owner = partial(_owner, trace, runtime, top_of_ext, finder)
    _read_kernels(trace, kernels_ev, owner)
    _read_copies(trace, events, owner)
    return trace


_US = 1e3  # µs -> ns


def _span(e: dict) -> tuple[float, float]:
    s = float(e.get("ts", 0)) * _US
    return s, s + float(e.get("dur", 0)) * _US


def _take_cpu_ops(trace: Trace, events: list[dict]) -> tuple[dict[Any, Op], list[tuple[Any, Op]]]:
    """Add to the trace the top-level cpu ops per thread within iterations. Returns the top-level op of
    each External id (an op's own, or that of an op nested in it) and the top-level ops with their thread."""
    cpu = sorted((e for e in events if e.get("cat") == "cpu_op"),
                 key=lambda e: (e.get("tid"), e["ts"], -e.get("dur", 0)))
    top_of_ext: dict[Any, Op] = {}
    top_ops: list[tuple[Any, Op]] = []
    stack: list[tuple[float, Op]] = []
    last_tid = object()
    for e in cpu:
        s, end = _span(e)
        tid = e.get("tid")
        if tid != last_tid:
            stack, last_tid = [], tid
        while stack and stack[-1][0] < s:
            stack.pop()
        it = trace.iteration_of(s)
        if not stack:
            if it < 0:
                continue
            op = Op(name=str(e.get("name", "?")), start=s, end=end, iteration=it)
            top_ops.append((tid, op))
            trace.ops.append(op)
            stack.append((end, op))
            top = op
        else:
            top = stack[0][1]
            stack.append((end, top))
        ext = (e.get("args") or {}).get("External id")
        if ext is not None:
            top_of_ext[ext] = top
    return top_of_ext, top_ops


def _launch_calls(trace: Trace, events: list[dict]) -> dict[Any, tuple[float, Any, Any]]:
    """correlation -> (start, thread, External id) of each runtime/driver call; counts the launch
    calls inside iterations."""
    runtime: dict[Any, tuple[float, Any, Any]] = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            args = e.get("args") or {}
            s, _ = _span(e)
            if args.get("correlation") is not None:
                runtime[args["correlation"]] = (s, e.get("tid"), args.get("External id"))
            if any(k in str(e.get("name", "")) for k in LAUNCH_NAMES) and trace.iteration_of(s) >= 0:
                trace.launches += 1
    return runtime


def _owner(trace: Trace, runtime: dict[Any, tuple[float, Any, Any]], top_of_ext: dict[Any, Op], finder: _TopLevel,
           args: dict, gpu_start: float) -> tuple[str, int]:
    """The top-level op (name, iteration) behind GPU work: by its External id, else by its launch
    call's External id or the op open on the launching thread. Iteration -1: none found."""
    host = runtime.get(args.get("correlation"))
    op = top_of_ext.get(args.get("External id"))
    if op is None and host is not None:
        op = top_of_ext.get(host[2]) or finder.at(host[1], host[0])
    it = op.iteration if op else (trace.iteration_of(host[0]) if host else -1)
    return (op.name if op else ""), it


_Owner = Callable[[dict, float], tuple[str, int]]


def _read_kernels(trace: Trace, kernels_ev: list[dict], owner: _Owner) -> None:
    for e in kernels_ev:
        args = e.get("args") or {}
        s, end = _span(e)
        name, it = owner(args, s)
        if it < 0:
            continue
        trace.kernels.append(Kernel(name=str(e.get("name", "?")), start=s, end=end, op=name, iteration=it,
                                    grid=_dim3(args.get("grid")), block=_dim3(args.get("block")),
                                    stream=int(args.get("stream", 0) or 0)))


def _read_copies(trace: Trace, events: list[dict], owner: _Owner) -> None:
    for e in events:
        cat = e.get("cat")
        if cat not in ("gpu_memcpy", "gpu_memset"):
            continue
        args = e.get("args") or {}
        s, end = _span(e)
        name, it = owner(args, s)
        if it < 0:
            continue
        kind = "memset" if cat == "gpu_memset" else _memcpy_kind(str(e.get("name", "")))
        trace.copies.append(Copy(kind=kind, start=s, end=end, nbytes=int(args.get("bytes", 0) or 0), op=name,
                                 iteration=it))
