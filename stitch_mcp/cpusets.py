"""Cpusets: the cores a sandbox slot's processes may run on, held by the judge from outside.

On a CPU host the judge times both rooms on one core, one thread each, and itself beside them (they
take turns): beside two busy loops on a 2-core host, eager's relu then moved 1.03x from one pair of
rooms to the next, against 1.5-2x with the rooms unpinned (2026-11-26). A process may widen its own
affinity (`sched_setaffinity`) at will, so a room held by affinity alone could spread a candidate's
threads over every core while eager has one; its cgroup's cpuset it cannot widen: only root (the
server) writes it, and every process the room starts inherits it.

cgroup v1 (a hierarchy with the `cpuset` controller, as on this project's CI host, with one with
`cpuacct` beside it) or v2 (the `cpuset` controller enabled under the sandbox's cgroup folder, see
stitch_mcp.cgroups). Where neither can be had (not root, no cpuset controller) `unavailable()` says
why, and rooms on a CPU are timed unpinned on the wall clock with their default threads.

The same cgroups count the CPU a slot's processes use (`Cpuset.used_ms`): the judge times each call
on a CPU by it (stitch_mcp.judge.timing.judge_cpu_clock), where the wall clock also counts the turns
other work takes on the held core.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from stitch_mcp.cgroups import CGROUP_PARENT, CGROUP_ROOT, cgroup_unavailable

log = logging.getLogger(__name__)

V2_ROOT = CGROUP_ROOT
FOLDER = CGROUP_PARENT.name  # v1 folders take the name of v2's


class Cpuset(BaseModel):
    """One sandbox slot's cpuset cgroup: its processes run only on the cores it lists. With v1, also
    the slot's cgroup in the `cpuacct` hierarchy (v2's folder counts its CPU itself)."""

    folder: Path
    version: Literal[1, 2]
    accounting: Path | None = None  # v1: the slot's cpuacct folder

    @property
    def procs(self) -> list[Path]:
        """The files a process writes 0 to, to move itself in (before it runs anything)."""
        return [self.folder / "cgroup.procs"] + ([self.accounting / "cgroup.procs"] if self.accounting else [])

    def used_ms(self) -> float:
        """CPU time every process of the slot has used since it was made (the kernel's
        accounting: threads, children, processes reaped or re-parented alike). Exact to the
        nanosecond with v1, the microsecond with v2; other work on the host does not add to it."""
        if self.version == 2:
            stat = dict(line.split() for line in (self.folder / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e3
        return int((self.accounting / "cpuacct.usage").read_text()) / 1e6  # type: ignore[operator]

    def hold(self, cpus: set[int]) -> None:
        """Every process of the slot, now and later, runs on `cpus` only."""
        (self.folder / "cpuset.cpus").write_text(cpu_list(cpus))

    def release(self) -> None:
        """The slot's processes may run on every core its parent has."""
        # named: v2's empty list (the parent's) is refused while processes are in it
        (self.folder / "cpuset.cpus").write_text((self.folder.parent / self._effective).read_text().strip())

    def cpus(self) -> set[int]:
        """The cores its processes may run on now."""
        return parse_cpu_list((self.folder / self._effective).read_text())

    @property
    def _effective(self) -> str:
        return "cpuset.cpus.effective" if self.version == 2 else "cpuset.effective_cpus"


def cpu_list(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def parse_cpu_list(text: str) -> set[int]:
    """'0-2,5' -> {0, 1, 2, 5} (the kernel's list format)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            cpus.update(range(int(lo), int(hi) + 1))
        elif part:
            cpus.add(int(part))
    return cpus


def _v1_root(controller: str = "cpuset") -> Path | None:
    """Where a v1 hierarchy with `controller` is mounted, if one is."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) > 3 and fields[2] == "cgroup" and controller in fields[3].split(","):
            return Path(fields[1])
    return None


def _v1_folder(folder: Path) -> None:
    """A v1 cpuset folder starts with no cores and no memory nodes: its parent's, before any process."""
    folder.mkdir(exist_ok=True)
    for name in ("cpuset.mems", "cpuset.cpus"):
        (folder / name).write_text((folder.parent / name.replace(".", ".effective_", 1)).read_text().strip())


def _v2_enabled() -> bool:
    """Whether the cpuset controller is on for the sandbox's v2 folder's children (turned on here if it can be)."""
    parent = V2_ROOT / FOLDER
    if "cpuset" not in (V2_ROOT / "cgroup.controllers").read_text().split() or not parent.is_dir():
        return False
    for folder in (V2_ROOT, parent):
        control = folder / "cgroup.subtree_control"
        if "cpuset" not in control.read_text().split():
            control.write_text("+cpuset")
    return True


@functools.lru_cache(maxsize=1)
def unavailable() -> str:
    """Why no slot can have a cpuset here ('' when it can). Asked once; with v2, in the sandbox's
    folder (stitch_mcp.cgroups)."""
    if os.geteuid() != 0:
        return "not root: the cgroup folders are not ours to write"
    try:
        if (V2_ROOT / "cgroup.controllers").exists():
            if not cgroup_unavailable() and _v2_enabled():
                return ""
        root, accounting = _v1_root(), _v1_root("cpuacct")
        if root is None or accounting is None:
            return "no cgroup v1 cpuset and cpuacct hierarchies, and no cpuset controller for cgroup v2's sandbox folder"
        _v1_folder(root / FOLDER)
        (accounting / FOLDER).mkdir(exist_ok=True)
    except OSError as exc:
        return f"cannot make a cpuset cgroup ({exc.strerror or exc})"
    return ""


def slot_cpuset(slot: int) -> Cpuset | None:
    """Slot `slot`'s cpuset, made or reset to every core (a room held to one core before may have
    left it so); None where there can be none (`unavailable`)."""
    if unavailable():
        return None
    try:
        if (V2_ROOT / "cgroup.controllers").exists() and _v2_enabled():
            cpuset = Cpuset(folder=V2_ROOT / FOLDER / f"slot-{slot}", version=2)
            cpuset.folder.mkdir(exist_ok=True)
        else:
            root, accounting = _v1_root(), _v1_root("cpuacct")
            if root is None or accounting is None:  # a v2 host whose cpuset controller went off since
                return None
            cpuset = Cpuset(folder=root / FOLDER / f"slot-{slot}", version=1, accounting=accounting / FOLDER / f"slot-{slot}")
            _v1_folder(cpuset.folder)
            cpuset.accounting.mkdir(exist_ok=True)  # type: ignore[union-attr]
        cpuset.release()
    except OSError as exc:
        log.warning("no cpuset for sandbox slot %d: %s", slot, exc)
        return None
    return cpuset


def interrupts_on(core: int) -> int | None:
    """Interrupts the kernel has taken on `core` since boot (/proc/interrupts, every source summed);
    None where that cannot be read. Where the kernel does not account interrupt time apart
    (CONFIG_IRQ_TIME_ACCOUNTING off, as on this project's CI host), their handling is billed to the
    task they interrupt: a room that arms thousands of timers on the shared core bills the other
    room's cgroup (the finding `interrupt_storm`, judge.timing.interrupt_rates)."""
    try:
        with open("/proc/interrupts") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    try:
        column = lines[0].split().index(f"CPU{core}") + 1
    except (ValueError, IndexError):
        return None
    total = 0
    for line in lines[1:]:
        fields = line.split()
        if len(fields) > column and fields[column].isdigit():
            total += int(fields[column])
    return total


def queued_ms() -> float:
    """How long the calling thread has waited, runnable, for a core since it started (the kernel's
    `run_delay`, /proc/thread-self/schedstat); 0.0 where that cannot be read. The judge's thread waits
    so while a room it woke runs on its core, and behind whatever else runs there after the room
    answers (judge.timing._blocked_ms)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0
