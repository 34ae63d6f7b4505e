#!/usr/bin/env python
"""How much one core of this host changes speed from second to second: can CPU speedups repeat here?

    python tools/host_noise.py [--seconds 60] [--busy 2] [--busy-on 1] [--json out.json]

One process, held to one core, alternates two kinds of work in batches of 70 calls, each timed on
its thread's CPU clock: memory-bound (eager's relu over 64K floats, copied into a shared mapping,
its input fresh from a pool every batch, as the judge feeds its rooms) and compute-bound (a 96x96
matmul). Every window (a second by default) prints each kind's 10th-percentile call, and the end
says how far each moved and how far their ratio moved.

Why their ratio: the judge times a candidate and eager's reference taking turns on one core, so
what slows both alike cancels out. What does not is a change that slows one kind of work more than
the other. On a 2-vCPU KVM guest (2026-11-27) a busy loop on the *other* vCPU slowed this core's
matmul 15-20% and its relu 20-30%, for stretches of seconds to tens of seconds (the host pairs the
two vCPUs on one physical core's hyperthreads at times): a memory-bound eager against a
compute-bound candidate then gets a speedup that moves with the stretch, however it is measured.
`--busy N` starts N busy loops (unpinned), `--busy-on C` one pinned to core C instead.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import subprocess
import sys
import time

CALLS = 70
FLOATS = 64 * 1024
QUANTILE = 0.1


def _shared(torch, nbytes: int):
    fd = os.memfd_create("host-noise")
    os.ftruncate(fd, nbytes)
    return torch.frombuffer(mmap.mmap(fd, nbytes), dtype=torch.float32)


def _busy_loops(count: int, core: int | None) -> list[subprocess.Popen]:
    loop = [sys.executable, "-c", "while True: pass"]
    if core is not None:
        return [subprocess.Popen(["taskset", "-c", str(core), *loop])]
    return [subprocess.Popen(loop) for _ in range(count)]


def sample(seconds: float, window_s: float, core: int, echo: bool = True) -> list[dict[str, float]]:
    """Per window: the QUANTILE call of each kind of work, in microseconds (printed with `echo`)."""
    import torch

    own, threads = os.sched_getaffinity(0), torch.get_num_threads()
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {core})
    try:
        return _windows(torch, seconds, window_s, echo)
    finally:  # as it was: tools/bench_suite.py samples between checks in its own process
        os.sched_setaffinity(0, own)
        torch.set_num_threads(threads)


def _windows(torch, seconds: float, window_s: float, echo: bool) -> list[dict[str, float]]:
    ins = _shared(torch, CALLS * FLOATS * 4).view(CALLS, FLOATS)
    outs = _shared(torch, CALLS * FLOATS * 4).view(CALLS, FLOATS)
    pool = torch.rand(3 * CALLS, FLOATS) - 0.5
    a, b = torch.rand(96, 96), torch.rand(96, 96)
    windows, end = [], time.monotonic() + seconds
    with torch.no_grad():
        while time.monotonic() < end:
            memory, compute, until = [], [], time.monotonic() + window_s
            while time.monotonic() < until:
                start = int(torch.randint(0, 2 * CALLS, ()))
                ins.copy_(pool[start:start + CALLS])
                t0 = time.thread_time()
                for j in range(CALLS):
                    outs[j].copy_(torch.relu(ins[j]))
                t1 = time.thread_time()
                for _ in range(CALLS):
                    torch.mm(a, b)
                memory.append((t1 - t0) / CALLS * 1e6)
                compute.append((time.thread_time() - t1) / CALLS * 1e6)
            windows.append({"at_s": round(seconds - (end - time.monotonic()), 1),
                            "memory_us": _quantile(memory), "compute_us": _quantile(compute)})
            if echo:
                print(f"{windows[-1]['at_s']:6.1f} s  memory-bound {windows[-1]['memory_us']:6.1f} us  "
                      f"compute-bound {windows[-1]['compute_us']:6.1f} us", flush=True)
    return windows


def _quantile(values: list[float]) -> float:
    return sorted(values)[int(QUANTILE * len(values))]


def summary(windows: list[dict[str, float]]) -> dict[str, float]:
    """How far each kind moved over the windows (max/min), how far their ratio moved, and the share
    of windows whose compute-bound call was within 5% of the fastest (the core at its best)."""
    memory = [w["memory_us"] for w in windows]
    compute = [w["compute_us"] for w in windows]
    ratio = [m / c for m, c in zip(memory, compute)]
    return {"windows": len(windows), "memory_moved": max(memory) / min(memory),
            "compute_moved": max(compute) / min(compute), "ratio_moved": max(ratio) / min(ratio),
            "at_best": sum(c <= 1.05 * min(compute) for c in compute) / len(compute)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--window", type=float, default=1.0, help="seconds a window")
    ap.add_argument("--core", type=int, default=0, help="the core the work is held to")
    ap.add_argument("--busy", type=int, default=0, help="start this many busy loops (a loaded host)")
    ap.add_argument("--busy-on", type=int, default=None, help="one busy loop pinned to this core instead")
    ap.add_argument("--json", default=None, help="also write the windows and the summary here")
    args = ap.parse_args()
    busy = _busy_loops(args.busy, args.busy_on)
    try:
        windows = sample(args.seconds, args.window, args.core)
    finally:
        for loop in busy:
            loop.kill()
    result = summary(windows)
    print(f"over {result['windows']} windows: memory-bound moved {result['memory_moved']:.2f}x, compute-bound "
          f"{result['compute_moved']:.2f}x, their ratio {result['ratio_moved']:.2f}x; the core at its best "
          f"(within 5%) in {result['at_best']:.0%} of them")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"windows": windows, "summary": result}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
