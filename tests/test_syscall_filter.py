"""stitch_mcp.syscall_filter in a real process: the key calls refused for every thread and child,
another ABI's calls refused, everything else untouched."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stitch_mcp.sandbox import probe_isolation
from stitch_mcp.syscall_filter import unavailable

PROGRAM = r"""
import ctypes, json, os, platform, subprocess, sys, threading
from stitch_mcp.syscall_filter import _ARCHES, deny_keyrings
libc = ctypes.CDLL(None, use_errno=True)
_, _, add_key, request_key, keyctl = _ARCHES[platform.machine()]
def errno_of(*call):
    return ctypes.get_errno() if libc.syscall(*call) < 0 else 0
def look_up():  # a key no one added: ENOKEY where the call goes through
    return errno_of(request_key, b"user", b"stitch-no-such-key", None, 0)
seen = {"before": look_up()}
go, in_thread = threading.Event(), {}
thread = threading.Thread(target=lambda: (go.wait(), in_thread.update(errno=look_up())))
thread.start()  # running before the filter: it must get it too
deny_keyrings()
go.set(); thread.join()
seen.update(after=look_up(), thread=in_thread["errno"], keyctl=errno_of(keyctl, 0, -4, 0, 0, 0),
            add_key=errno_of(add_key, b"user", b"k", b"v", 1, -4),
            child=subprocess.run([sys.executable, "-c", "import ctypes; l = ctypes.CDLL(None, use_errno=True); "
                                  f"print(ctypes.get_errno() if l.syscall({request_key}, b'user', b'k', None, 0) < 0 "
                                  "else 0)"], capture_output=True, text=True).stdout.strip(),
            x32=errno_of(0x40000000 | 39) if platform.machine() == "x86_64" else 1,  # x32's getpid
            pid=os.getpid() > 0, file=len(open("/proc/self/status").read()) > 0)
print(json.dumps(seen))
"""


@pytest.mark.skipif(bool(unavailable()), reason=unavailable() or "available")
def test_key_calls_are_refused_for_every_thread_and_child_and_nothing_else_is():
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["before"] == 126  # ENOKEY: before the filter the kernel looked
    eperm = 1
    assert seen["after"] == seen["thread"] == seen["keyctl"] == seen["add_key"] == eperm, seen
    assert seen["child"] == str(eperm), seen
    assert seen["x32"] == eperm, seen  # another ABI's numbers: refused whole
    assert seen["pid"] and seen["file"]


def test_the_sandbox_says_whether_rooms_get_it():
    iso = probe_isolation()
    said = " ".join(iso.mechanisms + iso.warnings)
    assert ("keyrings (per uid, they outlive a room) denied" in said) == (not unavailable())
    assert ("kernel keyrings not denied" in said) == bool(unavailable())
