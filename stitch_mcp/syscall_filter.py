"""The syscall filter every process that runs candidate code starts under (seccomp, installed by
the process itself before any candidate code loads, so at every sandbox level alike).

What it refuses is kernel state that outlives a room and that the next room can read: a channel from
one check to the next, across slots, tasks and data folders (red team, 2026-11-28).
- Keyrings (`add_key`, `request_key`, `keyctl`): they belong to a uid, not to a process or a
  namespace, and a room runs as its slot's uid. A key one check added was read by the next check
  on its slot. Docker's default profile refuses the same calls.
- Exact page-cache residency of the files every room reads (the Python and torch trees): a room
  read it with `preadv2(RWF_NOWAIT)` and cleared it with `posix_fadvise(DONTNEED)`, eight headers
  making an eight-bit counter that the next check read back. Refused: `mincore`, `cachestat`,
  `RWF_NOWAIT` reads and writes, the advice that drops pages (`fadvise` DONTNEED, `madvise`
  COLD/PAGEOUT, `process_madvise`), and io_uring (which reads without waiting too). What is left:
  timing a read, or a mapping's `/proc/self/pagemap` after fault-around, still tells cached pages
  from not (red team, 2026-11-28), and reading marks them; only pressure on the host's memory
  unmarks them, which the rooms' memory cap limits (judge_room.room_memory_bytes).
- New namespaces (`unshare`, `setns`, `clone` with CLONE_NEW* flags; `clone3`, whose flags a filter
  cannot see, answers ENOSYS so that libc falls back to `clone`): a room could make itself root
  of a user namespace of its own, with all the kernel that opens to it.

Everything else is allowed; the refused calls fail with EPERM (`clone3` ENOSYS), as where a host
does not allow them.
Nothing PyTorch, CUDA, Triton or a compiler does needs them. Syscalls of another ABI than the
process's own (i386's `int 0x80` on x86_64, x32's numbers) are refused whole.

The filter is a classic-BPF program (`_program`), installed with no_new_privs and
SECCOMP_FILTER_FLAG_TSYNC: once installed no process can remove it, and every thread and child
inherits it. `unavailable()` says why a host cannot have it (another architecture, or a kernel
without seccomp); there `restrict()` does nothing and the sandbox's description says so.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct

# architecture: (AUDIT_ARCH, {name: number}); the calls added since 5.1 share numbers (_SHARED)
_ARCHES = {
    "x86_64": (0xC000003E, {"seccomp": 317, "add_key": 248, "request_key": 249, "keyctl": 250, "mincore": 27,
                            "madvise": 28, "fadvise64": 221, "preadv2": 327, "pwritev2": 328, "clone": 56,
                            "unshare": 272, "setns": 308}),
    "aarch64": (0xC00000B7, {"seccomp": 277, "add_key": 217, "request_key": 218, "keyctl": 219, "mincore": 232,
                             "madvise": 233, "fadvise64": 223, "preadv2": 286, "pwritev2": 287, "clone": 220,
                             "unshare": 97, "setns": 268}),
}
_SHARED = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "clone3": 435,
           "process_madvise": 440, "cachestat": 451}
_X32_BIT = 0x40000000  # x86_64's x32 ABI: the same arch, numbers with this bit set

_CLONE_NEW = 0x7E020080  # CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_RWF_NOWAIT = 0x8
# name: None (refused whole), (argument, bits: refused where any is set), or (argument, [values refused])
RULES: dict[str, tuple[int, int | list[int]] | None] = {
    "add_key": None, "request_key": None, "keyctl": None,
    "mincore": None, "cachestat": None, "process_madvise": None,
    "io_uring_setup": None, "io_uring_enter": None, "io_uring_register": None,
    "preadv2": (5, _RWF_NOWAIT), "pwritev2": (5, _RWF_NOWAIT),
    "fadvise64": (3, [4]),  # POSIX_FADV_DONTNEED
    "madvise": (2, [20, 21]),  # MADV_COLD, MADV_PAGEOUT
    "unshare": None, "setns": None, "clone": (0, _CLONE_NEW),
    "clone3": None,
}
_ENOSYS = {"clone3"}

_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | errno
_DENY, _NOSYS = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
_PR_SET_NO_NEW_PRIVS, _SET_MODE_FILTER, _FILTER_FLAG_TSYNC = 38, 1, 1
_Op = tuple[int, int, int, int]  # (code, jt, jf, k): a jump counts the instructions it skips


def _rule(nr: int, rule: tuple[int, int | list[int]] | None, refused: int) -> list[_Op]:
    """One syscall's instructions, the number in the accumulator: on a match, decide it here."""
    if rule is None:
        body = [(_RET_K, 0, 0, refused)]
    else:
        arg, match = rule
        load = (_LD_W_ABS, 0, 0, 16 + 8 * arg)  # seccomp_data.args[arg], its low 32 bits
        if isinstance(match, int):
            body = [load, (_JSET_K, 1, 0, match), (_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, refused)]
        else:
            tests = [(_JEQ_K, len(match) - i, 0, v) for i, v in enumerate(match)]
            body = [load, *tests, (_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, refused)]
    return [(_JEQ_K, 0, len(body), nr), *body]


def _program(arch: str) -> list[_Op]:
    """Another ABI refused, then each rule's syscall; everything else allowed."""
    audit_arch, numbers = _ARCHES[arch]
    numbers = {**numbers, **_SHARED}
    prelude = [(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
               (_JEQ_K, 1, 0, audit_arch), (_RET_K, 0, 0, _DENY),
               (_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if arch == "x86_64":
        prelude += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, _DENY)]
    rules = [op for name, rule in RULES.items()
             for op in _rule(numbers[name], rule, _NOSYS if name in _ENOSYS else _DENY)]
    return prelude + rules + [(_RET_K, 0, 0, _ALLOW)]


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


def restrict() -> None:
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
    if libc.syscall(_ARCHES[arch][1]["seccomp"], _SET_MODE_FILTER, _FILTER_FLAG_TSYNC, prog) != 0:
        err = ctypes.get_errno() or errno.EINVAL  # TSYNC: a positive return names a thread that refused
        raise OSError(err, f"seccomp(SET_MODE_FILTER): {os.strerror(err)}")
