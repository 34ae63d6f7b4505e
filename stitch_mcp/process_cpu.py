"""The CPU time of a process tree, read from outside it. On a CPU the judge times the reference's
room's batches of calls by it, since a host's other work only ever adds wall time, and counts the
cores the candidate's room used while timed (stitch_mcp.judge.timing).

Each process's own kernel clock (clock_getcpuclockid: all its threads, to the nanosecond) is
readable from another uid and from outside the process's pid namespace, and nothing in the tree
can change it. What it does not show is a process that starts and ends between two readings: its
time is folded into whoever reaps it (the tree's, or the judge's as subreaper), where the kernel
shows it in 10 ms ticks. So a reading is only used where the tree stayed as it was (`whole`): the
same processes, no tick of child time folded into any of them, nothing re-parented to the judge;
a child that used less than a tick passes unseen, which is why the judge never times the
candidate's batches by it (stitch_mcp.judge.timing.BatchTimes).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

_libc: ctypes.CDLL | None = None


def clock_of(pid: int) -> int | None:
    """Process `pid`'s CPU-time clock id, or None where this host gives none for it."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        clock = ctypes.c_int()
        if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
            return None
        time.clock_gettime(clock.value)
        return clock.value
    except (AttributeError, OSError):
        return None


def tree(root_pid: int) -> list:
    """The process `root_pid` and its descendants now (psutil processes; empty once it has gone)."""
    import psutil

    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _folded_ticks(procs: list) -> float:
    """CPU seconds of reaped children, summed over `procs` (the kernel counts them in clock ticks)."""
    import psutil

    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


class TreeCpu:
    """CPU seconds used by the processes of the tree under `root_pid` as it is when this is made.
    `strays()` maps processes that left the tree but are still the reader's to account for
    (children re-parented to a subreaper judge) to whether each has exited (a zombie)."""

    def __init__(self, root_pid: int, strays: Callable[[], dict[int, bool]] = dict):
        procs = tree(root_pid)
        self.root_pid, self.strays = root_pid, strays
        self.exited = {pid for pid, zombie in strays().items() if zombie}  # did all their work before
        self.pids = sorted(p.pid for p in procs)
        self.clocks = [clock_of(pid) for pid in self.pids]
        self.folded = _folded_ticks(procs)
        self.readable = bool(self.clocks) and all(c is not None for c in self.clocks)
        self.last = [0.0] * len(self.clocks)  # each clock's last reading: a process gone counts what it had
        self.gone = False

    def read(self) -> float:
        """Seconds so far (NaN where the clocks cannot be read here). A process that has gone counts
        its time up to the last reading before it went, and the tree is no longer whole."""
        if not self.readable:
            return float("nan")
        for i, clock in enumerate(self.clocks):
            try:
                self.last[i] = time.clock_gettime(clock)
            except OSError:
                self.gone = True
        return sum(self.last)

    def whole(self) -> bool:
        """Whether every reading since this was made counted all the tree's work: readable, the same
        processes, no reaped child's time folded in, no stray but those that had exited before."""
        if not self.readable or self.gone:
            return False
        procs = tree(self.root_pid)
        return (sorted(p.pid for p in procs) == self.pids and _folded_ticks(procs) == self.folded
                and set(self.strays()) <= self.exited)
