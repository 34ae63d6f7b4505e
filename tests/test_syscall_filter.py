"""stitch_mcp.syscall_filter in a real process: what it refuses, for every thread and child, and
that what honest programs do (threads, subprocesses, reads, madvise, fadvise) still works."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stitch_mcp.sandbox import probe_isolation
from stitch_mcp.syscall_filter import unavailable

PROGRAM = r"""
import ctypes, json, mmap, os, platform, subprocess, sys, threading
import torch
from stitch_mcp.syscall_filter import _ARCHES, _SHARED, restrict
libc = ctypes.CDLL(None, use_errno=True)
nr = {**_ARCHES[platform.machine()][1], **_SHARED}
def errno_of(*call):
    return ctypes.get_errno() if libc.syscall(*call) < 0 else 0
def look_up():  # a key no one added: ENOKEY where the call goes through
    return errno_of(nr["request_key"], b"user", b"stitch-no-such-key", None, 0)
def nowait_read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT)
        return 0
    except OSError as exc:
        return exc.errno
    finally:
        os.close(fd)
def fadvise(path, advice):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, advice)
        return 0
    except OSError as exc:
        return exc.errno
    finally:
        os.close(fd)
page = mmap.mmap(-1, 4096)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
vec = ctypes.create_string_buffer(1)
def call(name, *args):
    return errno_of(nr[name], *args)
seen = {"before": look_up(), "mincore_before": call("mincore", ctypes.c_void_p(address), 4096, vec)}
go, in_thread = threading.Event(), {}
thread = threading.Thread(target=lambda: (go.wait(), in_thread.update(errno=look_up())))
thread.start()  # running before the filter: it must get it too
restrict()
go.set(); thread.join()
seen.update(
    keys=[look_up(), in_thread["errno"], call("keyctl", 0, -4, 0, 0, 0), call("add_key", b"user", b"k", b"v", 1, -4)],
    child=subprocess.run([sys.executable, "-c", "import ctypes; l = ctypes.CDLL(None, use_errno=True); "
                          f"print(ctypes.get_errno() if l.syscall({nr['request_key']}, b'user', b'k', None, 0) < 0 "
                          "else 0)"], capture_output=True, text=True).stdout.strip(),
    x32=errno_of(0x40000000 | 39) if platform.machine() == "x86_64" else 1,  # x32's getpid
    residency=[call("mincore", ctypes.c_void_p(address), 4096, vec), call("cachestat", 0, 0, 0, 0),
               nowait_read(torch.__file__), fadvise(torch.__file__, os.POSIX_FADV_DONTNEED),
               call("madvise", ctypes.c_void_p(address), 4096, 21), call("madvise", ctypes.c_void_p(address), 4096, 20),
               call("io_uring_setup", 8, ctypes.create_string_buffer(120))],
    namespaces=[call("unshare", 0x10000000), call("setns", 0, 0), call("clone", 0x10000000 | 17, 0, 0, 0, 0)],
    clone3=call("clone3", 0, 0),
    honest=[fadvise(torch.__file__, os.POSIX_FADV_SEQUENTIAL), call("madvise", ctypes.c_void_p(address), 4096, 4),
            len(open(torch.__file__, "rb").read(10)), float(torch.ones(1000).add(1).sum()),
            subprocess.run(["true"]).returncode, os.getpid() > 0],
)
print(json.dumps(seen))
"""


@pytest.mark.skipif(bool(unavailable()), reason=unavailable() or "available")
def test_the_filter_refuses_state_a_room_could_leave_and_nothing_an_honest_program_does():
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    eperm, enosys = 1, 38
    assert seen["before"] == 126 and seen["mincore_before"] == 0  # before the filter the kernel answered
    assert seen["keys"] == [eperm] * 4, seen  # the thread started before it too
    assert seen["child"] == str(eperm) and seen["x32"] == eperm, seen
    assert seen["residency"] == [eperm] * 7, seen
    assert seen["namespaces"] == [eperm] * 3 and seen["clone3"] == enosys, seen
    assert seen["honest"] == [0, 0, 10, 2000.0, 0, True], seen


def test_the_sandbox_says_whether_rooms_get_it():
    iso = probe_isolation()
    said = " ".join(iso.mechanisms + iso.warnings)
    assert ("exact page-cache residency and new namespaces refused" in said) == (not unavailable())
    assert ("no syscall filter" in said) == bool(unavailable())
