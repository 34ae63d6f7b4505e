"""Sandbox slot locks (stitch_mcp.sandbox.holding_slot), outside test_sandbox.py, whose tests each hold
slot 0 themselves."""

from __future__ import annotations

import subprocess
import sys
import time

from stitch_mcp.sandbox import holding_slot


def test_probes_share_slot_zero_and_do_not_wait_for_ever_on_it():
    """Isolation probes take slot 0's lock shared (many checks start, and probe, at once); a process
    holding it exclusively delays one only up to its wait, after which it goes on without the lock."""
    from stitch_mcp.sandbox import SLOT_LOCKS

    hold = ("import fcntl, os, sys, time\n"
            f"fd = os.open({str(SLOT_LOCKS / '0.lock')!r}, os.O_CREAT | os.O_RDWR, 0o600)\n"
            "fcntl.flock(fd, getattr(fcntl, sys.argv[1]))\nprint('held', flush=True)\ntime.sleep(60)\n")
    for mode, waits in (("LOCK_SH", False), ("LOCK_EX", True)):
        other = subprocess.Popen([sys.executable, "-c", hold, mode], stdout=subprocess.PIPE, text=True)
        try:
            assert other.stdout.readline() == "held\n"
            t0 = time.monotonic()
            with holding_slot(0, shared=True, wait_s=1.0):
                pass
            waited = time.monotonic() - t0
            assert (waited >= 1.0) == waits and waited < 5, (mode, waited)
        finally:
            other.kill()
            other.wait()
