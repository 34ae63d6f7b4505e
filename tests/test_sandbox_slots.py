"""Sandbox slot locks (stitch_mcp.sandbox.holding_slot), outside test_sandbox.py, whose tests each hold
slot 0 themselves."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from stitch_mcp.sandbox import holding_slot


@pytest.fixture(autouse=True)
def own_slot_locks(tmp_path, monkeypatch):
    """Slot locks of this test's own: the checks of tests running beside it (pytest-xdist) probe
    the sandbox on the host's slot 0 too."""
    from stitch_mcp import sandbox

    (tmp_path / "slots").mkdir()
    monkeypatch.setattr(sandbox, "SLOT_LOCKS", tmp_path / "slots")


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


def _slot_zero_is_free() -> bool:
    """Whether another process can take slot 0's lock exclusively right now."""
    from stitch_mcp.sandbox import SLOT_LOCKS

    try_lock = ("import fcntl, os\n"
                f"fd = os.open({str(SLOT_LOCKS / '0.lock')!r}, os.O_CREAT | os.O_RDWR, 0o600)\n"
                "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    print('busy')\n"
                "else:\n    print('free')\n")
    return subprocess.run([sys.executable, "-c", try_lock], capture_output=True, text=True,
                          timeout=30).stdout.strip() == "free"


def test_threads_of_one_process_each_hold_the_slot_until_their_own_block_ends():
    """eval runs its checks in threads that probe at once: each thread's block holds slot 0 (and nests
    within the thread) until that block ends, whichever thread took the lock first and leaves first:
    thread 0 leaves first, the three others check the lock is still held, then leave together."""
    import threading

    inside, leave = threading.Barrier(4), threading.Barrier(3)
    first_left = threading.Event()
    errors: list[BaseException] = []

    def probe_like(i: int) -> None:
        try:
            with holding_slot(0, shared=True, wait_s=5.0), holding_slot(0, shared=True, wait_s=5.0):
                inside.wait(timeout=10)
                if i:
                    first_left.wait(timeout=10)
                    assert not _slot_zero_is_free(), "a thread's block ran without slot 0's lock"
                    leave.wait(timeout=10)
        except BaseException as exc:  # noqa: BLE001 - reported below with the thread's number
            errors.append(exc)
        finally:
            if i == 0:
                first_left.set()

    threads = [threading.Thread(target=probe_like, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    assert _slot_zero_is_free()


def test_checks_starting_together_share_one_isolation_probe(monkeypatch):
    """Many threads asking for the isolation level at once get one answer from one probe of each
    level tried, not a probe each (which raced on slot 0 and could each settle on another level)."""
    import threading

    from stitch_mcp import sandbox

    tried: list[str] = []
    real_try = sandbox._try_level

    def counting_try(level, uid):
        tried.append(level)
        time.sleep(0.2)  # the others arrive while this probe runs
        return real_try(level, uid)

    monkeypatch.setattr(sandbox, "_try_level", counting_try)
    sandbox._probe.cache_clear()
    levels: list[str] = []
    threads = [threading.Thread(target=lambda: levels.append(sandbox.probe_isolation().level)) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        sandbox._probe.cache_clear()  # the next test probes with the real function
    assert len(levels) == 6 and len(set(levels)) == 1, levels
    assert len(tried) == len(set(tried)), f"levels probed more than once: {tried}"


def test_lock_folders_in_tmp_are_ours_and_closed_to_other_uids(tmp_path):
    """The device, memory and slot locks live in the host's /tmp, which a candidate sandboxed only
    by another uid shares: their folder is made closed to it (or closed again, if an older version
    made it open), and one it planted first (a link, or a folder of its own) is refused."""
    import os
    import stat

    from stitch_mcp.devices import lock_dir
    from stitch_mcp.sandbox import private_folder

    made = private_folder(tmp_path / "new")
    opened = tmp_path / "open"
    opened.mkdir(mode=0o755)
    os.chmod(opened, 0o755)
    for folder in (made, private_folder(opened), lock_dir()):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(RuntimeError, match="not a folder owned by this user"):
        private_folder(tmp_path / "link")
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        with pytest.raises(RuntimeError, match="not a folder owned by this user"):
            private_folder(theirs)
        other_uid = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                                    "-c", f"open({str(lock_dir() / 'device-x.lock')!r}, 'a+')"],
                                   capture_output=True, text=True)
        assert other_uid.returncode != 0 and "PermissionError" in other_uid.stderr, other_uid.stderr
