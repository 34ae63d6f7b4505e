"""The syscall filter every process that runs candidate code starts under (seccomp, installed by
the process itself before any candidate code loads, so at every sandbox level alike).

What it denies: the kernel's key management (`add_key`, `request_key`, `keyctl`). Keyrings belong to
a uid, not to a process or a namespace this project makes: a room runs as its slot's uid, so a key a
candidate added to its user keyring outlived the room and was read by the next candidate on that
slot, another task's included (red team, 2026-11-28: a count of earlier checks carried from one
check to the next). Docker's default profile denies the same calls for the same reason. They fail
with EPERM, as where keyrings are not allowed; nothing PyTorch, CUDA or a compiler does uses them.

Syscalls of another ABI than the process's own (i386's `int 0x80` on x86_64, x32's numbers) are
denied whole: their numbers differ, and nothing honest here makes them.

The filter is a short classic-BPF program (`_program`), installed with no_new_privs and
SECCOMP_FILTER_FLAG_TSYNC; once installed no process can remove it, and every thread and child
inherits it. `unavailable()` says why a host cannot have it (another architecture, or a kernel
without seccomp filters); there `deny_keyrings()` does nothing and the sandbox's description says so.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct

# architecture: (AUDIT_ARCH, seccomp syscall, add_key, request_key, keyctl)
_ARCHES = {"x86_64": (0xC000003E, 317, 248, 249, 250), "aarch64": (0xC00000B7, 277, 217, 218, 219)}
_X32_BIT = 0x40000000  # x86_64's x32 ABI: the same arch, numbers with this bit set

_LD_W_ABS, _JA, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x05, 0x15, 0x35, 0x06
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
_PR_SET_NO_NEW_PRIVS, _SET_MODE_FILTER, _FILTER_FLAG_TSYNC = 38, 1, 1


def _program(arch: str) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) instructions: another ABI denied, then the key calls; everything else allowed."""
    audit_arch, _, *keys = _ARCHES[arch]
    tests = ([(_JGE_K, _X32_BIT)] if arch == "x86_64" else []) + [(_JEQ_K, nr) for nr in keys]
    deny = 4 + len(tests) + 1  # the last instruction; a jump counts the instructions it skips
    return [(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
            (_JEQ_K, 1, 0, audit_arch),
            (_JA, 0, 0, deny - 3),
            (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
            *[(code, deny - i - 1, 0, k) for i, (code, k) in enumerate(tests, start=4)],
            (_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _DENY)]


@functools.cache
def unavailable() -> str:
    """Why this host's processes cannot be given the filter; '' where they can."""
    arch = platform.machine()
    if arch not in _ARCHES:
        return f"no syscall filter for {arch}"
    try:
        with open("/proc/self/status") as f:
            if not any(line.startswith("Seccomp:") for line in f):
                return "the kernel has no seccomp"
    except OSError:
        return "no /proc/self/status"
    return ""


def deny_keyrings() -> None:
    """Install the filter on this process (and every thread it has, and every child it starts);
    nothing where `unavailable()`. Raises OSError where the kernel refuses it."""
    if unavailable():
        return
    arch = platform.machine()
    code = b"".join(struct.pack("HBBI", *op) for op in _program(arch))
    filters = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("HxxxxxxP", len(code) // 8, ctypes.addressof(filters))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    prog = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.syscall(_ARCHES[arch][1], _SET_MODE_FILTER, _FILTER_FLAG_TSYNC, prog) != 0:
        code = ctypes.get_errno() or errno.EINVAL  # TSYNC: a positive return names a thread that refused
        raise OSError(code, f"seccomp(SET_MODE_FILTER): {os.strerror(code)}")
