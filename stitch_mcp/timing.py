"""In-process timing of the reference (the torch.compile baseline, in a judge or baseline worker:
processes that never load candidate code), in the spirit of triton.testing.do_bench. Candidate
and eager are timed through their rooms instead (stitch_mcp.judge.timing.time_rooms), the same way.

On a GPU: CUDA events around each call on the current stream, the L2 cache flushed (a 256 MB
write) before every call, a device-wide synchronize after every call (so work on any stream has
finished before the next call and before a time is read), and the host clock around the same
interval (a time far above the events' time means work escaped the timed stream). On the CPU: the
host clock; where the rooms are timed on one core by their CPU (`one_core`), this thread's CPU
time, on one core with one thread. Warm-up first, then timed calls until the spread is small
(IQR/median under `rel_spread`), a time budget is spent, or `max_calls` is reached. Returns median,
IQR, coefficient of variation and min.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

_perf_counter = time.perf_counter

try:  # bound before any candidate is imported
    import torch as _torch

    _Event = _torch.cuda.Event
    _elapsed_time = _torch.cuda.Event.elapsed_time
    _record = _torch.cuda.Event.record
    _synchronize = _torch.cuda.synchronize
except Exception:  # pragma: no cover - torch is always there in a worker
    _torch = None

L2_FLUSH_BYTES = 256 * 1024 * 1024


@contextlib.contextmanager
def one_core(device: str) -> Iterator[None]:
    """On a CPU host whose rooms are timed on one core with one thread (stitch_mcp.cpusets), this
    thread and torch's the same while the block runs: compiling too, as torch.compile's C++ takes
    its thread count at compile time. Elsewhere nothing changes."""
    from stitch_mcp.cpusets import unavailable

    if device.startswith("cuda") or _torch is None or unavailable() or not hasattr(os, "sched_setaffinity"):
        yield
        return
    global _cpu_clock
    with pinned({_current_core()}, one_thread=True):
        _cpu_clock = time.thread_time
        try:
            yield
        finally:
            _cpu_clock = None


@contextlib.contextmanager
def pinned(cores: set[int], one_thread: bool) -> Iterator[None]:
    """This thread on `cores` (and, with `one_thread`, torch's intra-op threads at one) while the
    block runs; as before afterwards."""
    own, threads = os.sched_getaffinity(0), _torch.get_num_threads()
    os.sched_setaffinity(0, cores)
    if one_thread:
        _torch.set_num_threads(1)
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)
        _torch.set_num_threads(threads)


_cpu_clock: Callable[[], float] | None = None  # set by one_core


def _current_core() -> int:
    import psutil

    return psutil.Process().cpu_num()  # the core this process last ran on


def _stats(times: list[float]) -> dict[str, float]:
    s = sorted(times)
    n = len(s)
    med = statistics.median(s)
    if n >= 4:
        q = statistics.quantiles(s, n=4, method="inclusive")
        iqr = q[2] - q[0]
    else:
        iqr = s[-1] - s[0]
    mean = statistics.fmean(s)
    cv = statistics.pstdev(s) / mean if mean > 0 and n > 1 else 0.0
    return {"median_ms": med, "iqr_ms": iqr, "cv": cv, "min_ms": s[0], "calls": n}


def bench(fn: Callable[[int], Any], *, device: str = "cpu", setup: Callable[[int], None] | None = None,
          warmup: int = 3, min_calls: int = 10, max_calls: int = 100, rel_spread: float = 0.02,
          budget_s: float = 3.0, flush_l2: bool = True) -> dict[str, Any]:
    """Time `fn(i)`; `setup(i)` runs before each call outside the timed interval.

    Returns the stats of the timed interval plus `host_median_ms` (host clock around call and
    device-wide synchronize) and `method`.
    """
    cuda = device.startswith("cuda")
    for i in range(warmup):
        if setup:
            setup(i)
        fn(i)
        if cuda:
            _synchronize()
    flush = None
    if cuda and flush_l2:
        flush = _torch.empty(L2_FLUSH_BYTES // 4, dtype=_torch.int32, device=device)
    times: list[float] = []
    host: list[float] = []
    t_start = _perf_counter()
    i = 0
    while i < max_calls:
        if setup:
            setup(warmup + i)
        if cuda:
            if flush is not None:
                flush.zero_()
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            _synchronize()
            h0 = _perf_counter()
            _record(start)
            fn(warmup + i)
            _record(end)
            _synchronize()  # every stream of the device, not only the current one
            h1 = _perf_counter()
            times.append(_elapsed_time(start, end))
            host.append((h1 - h0) * 1e3)
        else:
            clock = _cpu_clock or _perf_counter
            h0 = clock()
            fn(warmup + i)
            h1 = clock()
            times.append((h1 - h0) * 1e3)
            host.append(times[-1])
        i += 1
        if i >= min_calls and i % 5 == 0:
            st = _stats(times)
            if st["median_ms"] > 0 and st["iqr_ms"] / st["median_ms"] < rel_spread:
                break
            if _perf_counter() - t_start > budget_s:
                break
    out = _stats(times)
    out["host_median_ms"] = statistics.median(host)
    out["method"] = ("cuda-events, L2 flush, device sync per call" if cuda else "host perf_counter")
    return out
