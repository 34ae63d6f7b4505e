"""cgroup v2 for sandbox slots: the folder every slot's cgroup lives in (memory and pids limits set by
stitch_mcp.sandbox; cpusets by stitch_mcp.cpusets), made and set up once, and the end of a slot's."""

from __future__ import annotations

import errno
import functools
import logging
import os
import signal
import time
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = CGROUP_ROOT / "stitch-sandbox"


@functools.lru_cache(maxsize=1)
def cgroup_unavailable() -> str:
    """Why no per-slot cgroup can be made here ('' when it can): needs cgroup v2 with memory and pids,
    writable, and those controllers enabled for children of /sys/fs/cgroup."""
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if not controllers.exists():
        return "no cgroup v2 at /sys/fs/cgroup"
    if not {"memory", "pids"} <= set(controllers.read_text().split()):
        return f"cgroup v2 lacks the memory or pids controller ({controllers.read_text().strip()})"
    try:
        CGROUP_PARENT.mkdir(exist_ok=True)
        for folder in (CGROUP_ROOT, CGROUP_PARENT):
            _enable_controllers(folder)
    except OSError as exc:
        return f"cannot create {CGROUP_PARENT} with memory+pids enabled ({exc.strerror or exc})"
    return ""


def _enable_controllers(folder: Path) -> None:
    control = folder / "cgroup.subtree_control"
    if {"memory", "pids"} <= set(control.read_text().split()):
        return
    try:
        control.write_text("+memory +pids")
    except OSError as exc:
        if exc.errno != errno.EBUSY or folder != CGROUP_ROOT:
            raise
        # A container's root cgroup that holds processes cannot hand controllers to children ("no internal
        # processes"): move them into a leaf of their own first, as docker-in-docker does. No limits there.
        leaf = CGROUP_ROOT / "stitch-server"
        leaf.mkdir(exist_ok=True)
        for pid in (CGROUP_ROOT / "cgroup.procs").read_text().split():
            try:
                (leaf / "cgroup.procs").write_text(pid)
            except OSError:
                pass  # exited meanwhile
        log.info("moved this container's processes into %s to enable memory+pids for sandboxes", leaf)
        control.write_text("+memory +pids")


def kill_cgroup(folder: Path) -> None:
    if (folder / "cgroup.kill").exists():
        (folder / "cgroup.kill").write_text("1")
        return
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def cleanup_cgroup(slot: int, timeout_s: float = 5.0) -> None:
    """Kill whatever is left in a slot's cgroup and remove it (call once the slot is retired)."""
    folder = CGROUP_PARENT / f"slot-{slot}"
    if not folder.exists():
        return
    kill_cgroup(folder)
    deadline = time.monotonic() + timeout_s
    while (folder / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        folder.rmdir()
    except OSError as exc:
        log.warning("could not remove %s: %s", folder, exc)
