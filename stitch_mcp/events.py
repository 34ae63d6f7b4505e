"""The worker side's events to its parent: one JSON line per event on the fd in STITCH_EVENT_FD.

The stages (build, run, baselines) report through these; they live apart from worker.py so that a
stage does not import the worker that imports it. Outside a worker (no STITCH_EVENT_FD) they do nothing.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

_event_fh = None


def emit(event: str, **data: Any) -> None:
    """Send one JSON event to the parent (worker side)."""
    global _event_fh
    if _event_fh is None:
        fd = int(os.environ.get("STITCH_EVENT_FD", "-1"))
        if fd < 0:
            return
        _event_fh = os.fdopen(fd, "wb", buffering=0)
        os.set_inheritable(fd, False)
    line = json.dumps({"event": event, **data}, default=str).encode() + b"\n"
    _event_fh.write(line)


def stage(name: str, **data: Any) -> None:
    emit("stage", name=name, t=time.monotonic(), **data)


# A worker stage in which the baseline worker waits for the checks of its task to end
# (correctness.baseline_stage): waiting, like the device and GPU memory, does not count against
# the worker's time limit (worker.WAITING_STAGES).
WAITING_FOR_CANDIDATES = "waiting for the task's candidates to end"

# A worker stage compiling torch.compile's baseline (correctness.compile_beside): our code on the
# reference, before any candidate code runs; like waiting, it does not count against the worker's
# time limit (a reference that compiles for minutes must not time a correct candidate out).
COMPILING_BASELINE = "compiling torch.compile's baseline"
