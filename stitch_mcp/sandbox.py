"""The sandbox candidate (and build) processes run in: the strongest isolation this host allows.

`sandboxed(argv, policy)` turns a command into one the caller starts with `subprocess.Popen(
**cmd.popen_kwargs())`. Levels, strongest first (`probe_isolation()` says which one this host gets):

- bubblewrap: `bwrap` builds a fresh root holding only read-only system paths, the Python prefixes,
  the granted paths and the writable workdir, with its own pid, network, ipc and uts namespaces,
  its own /proc, /tmp and /dev; as root it then drops to a dedicated uid per slot (`setpriv`),
  as a normal user it runs in a rootless user namespace.
- namespaces: the same view built by util-linux `unshare` and a short mount script (no bwrap).
- uid: only another uid (root without namespaces): other users' files and processes are protected
  by permissions alone; network and the host's /proc are visible.
- none: rlimits only; the candidate runs as the server's user.

Every level adds rlimits (`prlimit`) and, where cgroup v2 with memory and pids is writable, a cgroup
per slot. Nothing here needs `preexec_fn`: the placement and limits are execs in front of the
command, so Popen keeps its fast spawn path and is safe in a threaded server.

Lifecycle: one live sandbox per slot (its uid and cgroup are the slot's). Descriptors passed with
`popen_kwargs(pass_fds=...)` keep their numbers inside. `kill_sandbox(proc, cmd)` ends everything it
started (with a pid namespace, killing the outer process takes the namespace down; otherwise the slot's
uid and cgroup are swept); `stitch_mcp.cgroups.cleanup_cgroup(slot)` removes a retired slot's cgroup.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import logging
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import tempfile
import time
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from stitch_mcp.cgroups import CGROUP_PARENT, cgroup_unavailable, kill_cgroup
from stitch_mcp.config import get_settings
from stitch_mcp.cpusets import Cpuset, slot_cpuset
from stitch_mcp.cpusets import unavailable as cpuset_unavailable
from stitch_mcp.syscall_filter import unavailable as syscall_filter_unavailable

log = logging.getLogger(__name__)

Level = Literal["bubblewrap", "namespaces", "uid", "none"]
LEVELS: tuple[Level, ...] = ("bubblewrap", "namespaces", "uid", "none")
# A mount point the namespaces level mounts its private root on (inside its own mount namespace), per uid.
NS_ROOT = Path(f"/tmp/.stitch-sandbox-root-{os.geteuid()}")
# Ambient variables a sandboxed program may inherit from the server; everything else is dropped.
AMBIENT_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")
# Names a caller must never hand to a sandbox, even on purpose: server secrets and settings.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|^AWS_|^STITCH_AUTH", re.I)
SYSTEM_READ_ONLY = ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class SandboxPolicy(BaseModel):
    """What one sandboxed process may see and use."""

    workdir: Path = Field(description="the only writable place; also HOME and the working directory")
    read_only: list[Path] = Field(default_factory=list, description="extra paths it may read "
                                  "(a built extension's folder, the stitch_mcp package, include paths)")
    gpu: bool = Field(False, description="bind the /dev/nvidia* device nodes and /sys read-only")
    network: bool = False
    pid_namespace: bool = Field(True, description="its own pid namespace; False keeps it in the server's, which "
                                "legacy CUDA IPC handles need (the driver checks pids); its processes are then "
                                "found by its uid and cgroup")
    memory_bytes: int | None = Field(None, gt=0, description="cgroup memory.max; RLIMIT_AS without a cgroup "
                                     "(CPU only: CUDA reserves far more address space than it uses)")
    pids_max: int | None = Field(None, gt=0, description="cgroup pids.max and RLIMIT_NPROC")
    cpu_seconds: int | None = Field(None, gt=0, description="RLIMIT_CPU")
    file_bytes: int = Field(8 << 30, gt=0, description="RLIMIT_FSIZE: largest file it may write")
    open_files: int = Field(4096, gt=0, description="RLIMIT_NOFILE")
    slot: int = Field(0, ge=0, lt=1000, description="which dedicated uid (uid base + slot) and cgroup")
    env: dict[str, str] = Field(default_factory=dict, description="variables to set on top of the allow-list "
                                "(CUDA_VISIBLE_DEVICES, PYTHONPATH, ...); secret-looking names are refused")


class Isolation(BaseModel):
    """Which isolation a sandboxed process gets, in words."""

    level: Level
    mechanisms: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def line(self) -> str:
        return f"{self.level}: {', '.join(self.mechanisms) or 'nothing'}"


class SandboxedCommand(BaseModel):
    """A command ready for `subprocess.Popen(**cmd.popen_kwargs(pass_fds=...))`."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    isolation: Isolation
    uid: int | None = Field(None, description="the dedicated uid it runs as; None: the server's")
    cgroup: Path | None = None
    cpuset: Cpuset | None = Field(None, description="the slot's cpuset: the cores the judge holds it to (cpusets.py)")

    def popen_kwargs(self, pass_fds: tuple[int, ...] = ()) -> dict:
        """Popen arguments: its own session (so a process-group kill reaches it), only `pass_fds` inherited
        (they keep their numbers inside every level)."""
        return {"args": self.argv, "env": self.env, "cwd": str(self.cwd), "pass_fds": tuple(pass_fds),
                "close_fds": True, "start_new_session": True}


class _Mount(NamedTuple):
    kind: Literal["ro", "rw", "dev", "symlink"]
    src: str
    dest: str


def _settings_key() -> tuple[str, str, int, int]:
    s = get_settings()
    return s.sandbox, s.bwrap or shutil.which("bwrap") or "", s.sandbox_uid_base, os.geteuid()


def slot_uid(slot: int) -> int | None:
    """The dedicated uid of a slot when running as root, else None (a normal user cannot switch)."""
    return get_settings().sandbox_uid_base + slot if os.geteuid() == 0 else None


# ---------------------------------------------------------------- what the sandbox sees


def _python_prefixes() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(os.path.realpath(sys.executable)).parent.parent)}
    return sorted(p for p in paths if p != "/")  # a Python at / would otherwise grant the whole disk


def _covered(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _mount_plan(policy: SandboxPolicy) -> list[_Mount]:
    """Binds in the order they must be made: top-level links, then read-only paths and the workdir by depth
    (so a grant inside the workdir, or the workdir inside a grant, lands on top), granted links, devices."""
    plan = [_Mount("symlink", os.readlink(link), link) for link in TOP_LEVEL_LINKS if os.path.islink(link)]
    ro = [*SYSTEM_READ_ONLY, *_python_prefixes(), *map(str, policy.read_only)]
    ro += [link for link in TOP_LEVEL_LINKS if os.path.isdir(link) and not os.path.islink(link)]
    if policy.gpu:
        ro.append("/sys")
    workdir = os.path.realpath(policy.workdir)
    roots: list[str] = []
    binds = [_Mount("rw", workdir, workdir)]
    for path in sorted({os.path.realpath(p) for p in ro if os.path.exists(p)}, key=lambda p: (p.count("/"), p)):
        if not _covered(path, roots):
            roots.append(path)
            binds.append(_Mount("ro", path, path))
    plan += sorted(binds, key=lambda m: (m.dest.count("/"), m.dest))
    for given in map(os.path.abspath, policy.read_only):  # a granted link (/opt/cuda -> cuda-12.4) stays usable
        parent = os.path.dirname(given)
        if os.path.islink(given) and os.path.realpath(parent) == parent and not _covered(given, roots):
            plan.append(_Mount("symlink", os.path.realpath(given), given))
    if policy.gpu:
        plan += [_Mount("dev", node, node) for node in sorted(glob.glob("/dev/nvidia*"))]
    return plan


def _parents(dest: str, made: set[str], bound: list[str]) -> list[str]:
    """Parent folders of `dest` the fresh root still lacks (outside anything already bound)."""
    out = []
    for parent in reversed(Path(dest).parents):
        p = str(parent)
        if p in ("/", "/tmp", "/dev", "/proc") or p in made or _covered(p, bound):
            continue
        made.add(p)
        out.append(p)
    return out


def _bwrap_argv(bwrap: str, policy: SandboxPolicy, uid: int | None) -> list[str]:
    argv = [bwrap, *(["--unshare-pid"] if policy.pid_namespace else []), "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if uid is not None else ["--unshare-user"]
    made: set[str] = set()
    bound: list[str] = []
    for m in _mount_plan(policy):
        for parent in _parents(m.dest, made, bound):
            argv += ["--perms", "0755", "--dir", parent]
        flag = {"ro": "--ro-bind", "rw": "--bind", "dev": "--dev-bind", "symlink": "--symlink"}[m.kind]
        argv += [flag, m.src, m.dest]
        if m.kind != "symlink":
            bound.append(m.dest)
    return argv + ["--remount-ro", "/", "--chdir", os.path.realpath(policy.workdir), "--"]


DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")


def _fstab_field(path: str) -> str:
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\#" else c for c in path)


def _ns_script(policy: SandboxPolicy) -> str:
    """The shell the namespaces level runs as its pid 1: build the root bwrap would, then exec into it.
    Every exec costs milliseconds, so the folders are made by one `mkdir` and the mounts by two `mount -a`
    over fstab files written by the shell itself (the first mounts what the folders are made in)."""
    root = str(NS_ROOT)
    first = [f"proc {root}/proc proc nosuid,nodev,noexec 0 0", f"tmp {root}/tmp tmpfs mode=1777,nosuid,nodev 0 0",
             f"dev {root}/dev tmpfs mode=0755,nosuid 0 0"]
    second = [f"shm {root}/dev/shm tmpfs mode=1777,nosuid,nodev 0 0"]
    second += [f"/dev/{n} {root}/dev/{n} none bind 0 0" for n in DEV_NODES]
    folders, links, files = ["./dev/shm"], [], [f"./dev/{n}" for n in DEV_NODES]
    made: set[str] = set()
    bound: list[str] = []
    for m in _mount_plan(policy):
        folders += ["." + p for p in _parents(m.dest, made, bound)]
        if m.kind == "symlink":
            links.append((m.src, "." + m.dest))
            continue
        if not _covered(m.dest, bound):  # inside a bound folder the mount point already exists
            (folders if os.path.isdir(m.src) else files).append("." + m.dest)
        bound.append(m.dest)
        options = {"ro": "rbind,ro", "rw": "rbind", "dev": "bind"}[m.kind]
        second.append(f"{_fstab_field(m.src)} {_fstab_field(root + m.dest)} none {options} 0 0")
    links += [("/proc/self/fd", "./dev/fd")] + [(f"/proc/self/fd/{i}", f"./dev/{n}")
                                                for i, n in enumerate(("stdin", "stdout", "stderr"))]
    q = shlex.quote
    return "\n".join([
        "set -e", "umask 022", f"mount -t tmpfs -o mode=0755 stitch-root {q(root)}", f"cd {q(root)}",
        "mkdir proc dev tmp", f"printf '%s\\n' {' '.join(map(q, first))} > .fstab", "mount -a -T .fstab",
        f"mkdir -p {' '.join(map(q, folders))}", *(f": > {q(f)}" for f in files),
        *(f"ln -s {q(src)} {q(dest)}" for src, dest in links),
        f"printf '%s\\n' {' '.join(map(q, second))} > .fstab", "mount -a -T .fstab", "rm .fstab",
        f"mount -o remount,bind,ro {q(root)}"])


# ---------------------------------------------------------------- the command, level by level


def private_folder(path: Path) -> Path:
    """`path`, made or found: a real folder (not a link planted in /tmp) of this user's, closed to
    every other uid (mode 0700). What lives in the host's /tmp must be, where a candidate sandboxed
    only by another uid (level "uid") shares it: it could otherwise make the folder first, or
    open its lock files and hold them."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise RuntimeError(f"{path} is not a folder owned by this user: remove it")
    if stat.S_IMODE(info.st_mode) & 0o077:  # made by an older version, or under another umask
        os.chmod(path, 0o700)
    return path


def _make_ns_root() -> None:
    """The empty folder the namespaces level mounts on."""
    private_folder(NS_ROOT)


def _drop_privileges(uid: int | None) -> list[str]:
    """setpriv as the last step before the program: the slot's uid (as root), no capabilities, no_new_privs."""
    argv = [shutil.which("setpriv") or "/usr/bin/setpriv", "--no-new-privs", "--inh-caps=-all",
            "--bounding-set=-all"]
    if uid is not None:
        argv += [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return argv + ["--"]


def _rlimits(policy: SandboxPolicy, uid: int | None, cgroup: Path | None) -> list[str]:
    argv = [shutil.which("prlimit") or "/usr/bin/prlimit", "--core=0", f"--nofile={policy.open_files}",
            f"--fsize={policy.file_bytes}"]
    if uid is not None:  # RLIMIT_NPROC counts every process of the uid: only meaningful for a dedicated one
        argv.append(f"--nproc={policy.pids_max or 4096}")
    if policy.cpu_seconds:
        argv.append(f"--cpu={policy.cpu_seconds}")
    if policy.memory_bytes and cgroup is None and not policy.gpu:
        argv.append(f"--as={policy.memory_bytes}")
    return argv + ["--"]


def _cgroup_placement(procs: list[Path]) -> list[str]:
    """Move the (about to exec) process into the slot's cgroups before anything runs: `sh` writes its
    own pid to each `cgroup.procs` (v2's, and a v1 cpuset's)."""
    if not procs:
        return []
    writes = " && ".join(f'echo 0 > "${i}"' for i in range(len(procs)))  # $0 is the first, "$@" from $1 on
    return ["/bin/sh", "-c", f'{writes} && shift {len(procs) - 1} && exec "$@"', *map(str, procs)]


def _level_argv(level: Level, policy: SandboxPolicy, uid: int | None) -> list[str]:
    workdir = os.path.realpath(policy.workdir)
    if level == "bubblewrap":
        bwrap = _settings_key()[1]
        return _bwrap_argv(bwrap, policy, uid) + (_drop_privileges(uid) if uid is not None else [])
    if level == "namespaces":
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        flags = ["--mount", "--ipc", "--uts"] + ([] if policy.network else ["--net"])
        flags += ["--pid", "--kill-child"] if policy.pid_namespace else []
        if uid is None:
            flags = ["--user", "--map-root-user", *flags]
        enter = shlex.join([unshare, f"--root={NS_ROOT}", f"--wd={workdir}", *_drop_privileges(uid)])
        script = _ns_script(policy) + f'\nexec {enter} "$@"'
        return [unshare, *flags, "--", "/bin/sh", "-c", script, "sh"]
    if level == "uid":
        return _drop_privileges(uid)
    return []


def _environment(policy: SandboxPolicy) -> dict[str, str]:
    refused = sorted(k for k in policy.env if SECRET_NAME.search(k))
    if refused:
        raise ValueError(f"refusing to hand secret-looking variables to a sandbox: {', '.join(refused)}")
    env = {k: v for k, v in os.environ.items() if k in AMBIENT_ALLOWED or k.startswith("LC_")}
    env.setdefault("PATH", os.defpath)
    env.update(policy.env)
    workdir = os.path.realpath(policy.workdir)
    env.update(HOME=workdir, TMPDIR=os.path.join(workdir, "tmp"), USER="sandbox", LOGNAME="sandbox")
    return env


def _prepare_workdir(workdir: Path, uid: int | None) -> None:
    """Create the workdir and its tmp/, owned by the slot's uid (as root) and private to it."""
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    if uid is None:
        return
    os.chown(workdir, uid, uid)
    os.chmod(workdir, 0o700)
    for folder, dirs, files in os.walk(workdir):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, uid)


# ---------------------------------------------------------------- cgroup v2 (memory + pids per slot)


def _slot_cgroup(policy: SandboxPolicy) -> Path | None:
    if cgroup_unavailable():
        return None
    folder = CGROUP_PARENT / f"slot-{policy.slot}"
    try:
        folder.mkdir(exist_ok=True)
        (folder / "memory.max").write_text(str(policy.memory_bytes or "max"))
        if policy.memory_bytes and (folder / "memory.swap.max").exists():
            (folder / "memory.swap.max").write_text("0")
        (folder / "pids.max").write_text(str(policy.pids_max or "max"))
    except OSError as exc:
        log.warning("no cgroup for sandbox slot %d: %s", policy.slot, exc)
        return None
    return folder


# ---------------------------------------------------------------- probing and describing


PROBE_PROGRAM = "import json, os, sys; print(json.dumps([os.getuid(), os.getpid(), sys.prefix, sys.base_prefix]))"


def _missing_tools(level: Level, uid: int | None) -> str:
    if level == "bubblewrap":
        bwrap = _settings_key()[1]
        if not bwrap or not os.access(bwrap, os.X_OK):
            return "bwrap not found (apt-get install bubblewrap, or STITCH_BWRAP=/path/to/bwrap)"
    if level == "namespaces" and not shutil.which("unshare"):
        return "util-linux unshare not found"
    if level == "uid" and uid is None:
        return "not root: cannot switch to a dedicated uid"
    if level != "none" and not (shutil.which("setpriv") and shutil.which("prlimit")):
        return "util-linux setpriv/prlimit not found"
    return ""


# A slot's lock, held by whoever runs a sandbox in it: rooms take slots 1 and up (judge_room), the
# probes and direct sandboxed() callers (tests, tools) slot 0. A slot's uid is killed whole when its
# sandbox ends, so two sandboxes must never share one.
SLOT_LOCKS = Path(tempfile.gettempdir()) / f"stitch-sandbox-slots-{os.geteuid()}"


def open_slot_lock(slot: int) -> int:
    """A file descriptor on slot `slot`'s lock file, to flock."""
    return os.open(private_folder(SLOT_LOCKS) / f"{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)


# slot -> how many blocks of this THREAD hold it. Per thread: blocks of different threads (eval's
# checks probe at once) each take the lock themselves, so none ends holding a slot another released.
_slots_held = threading.local()


@contextlib.contextmanager
def holding_slot(slot: int, shared: bool = False, wait_s: float | None = None):
    """Hold slot `slot`'s lock while the block runs a sandbox in it: exclusive for a user that kills
    the slot's uid (the tests), shared among isolation probes (which only run a program as it and
    wait for it: many checks start at once). Within one thread the blocks nest (a test holding
    slot 0 probes the isolation levels). Past `wait_s` the block runs without it, with a warning:
    a probe must not wait for ever on a lock another process of the same user can hold."""
    import fcntl

    held: dict[int, int] = _slots_held.__dict__.setdefault("counts", {})
    if held.get(slot):
        held[slot] += 1
        try:
            yield
        finally:
            held[slot] -= 1
        return
    fd = open_slot_lock(slot)
    deadline = None if wait_s is None else time.monotonic() + wait_s
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        while True:
            try:
                fcntl.flock(fd, mode | (0 if deadline is None else fcntl.LOCK_NB))
                held[slot] = 1
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    log.warning("sandbox slot %d stayed locked for %.0f s: going on without its lock", slot, wait_s)
                    break
                time.sleep(0.05)
        yield
    finally:
        held.pop(slot, None)
        os.close(fd)


# How long an isolation probe waits for slot 0 (a test may hold it for its sandbox's run).
PROBE_SLOT_WAIT_S = 30.0


def _try_level(level: Level, uid: int | None) -> str:
    """Run a tiny Python program at `level`; '' when it ran as the level promises, else why not."""
    missing = _missing_tools(level, uid)
    if missing:
        return missing
    with tempfile.TemporaryDirectory(prefix="stitch-probe-") as tmp, \
            holding_slot(0, shared=True, wait_s=PROBE_SLOT_WAIT_S):
        policy = SandboxPolicy(workdir=Path(tmp) / "work")
        _prepare_workdir(policy.workdir, uid)
        try:
            if level == "namespaces":
                _make_ns_root()
        except (OSError, RuntimeError) as exc:
            return str(exc)
        argv = _rlimits(policy, uid, None) + _level_argv(level, policy, uid) + [sys.executable, "-c", PROBE_PROGRAM]
        try:
            out = subprocess.run(argv, env=_environment(policy), cwd=policy.workdir, capture_output=True,
                                 text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"could not start ({exc})"
    if out.returncode != 0:
        return f"exit {out.returncode}: {(out.stderr or out.stdout).strip().splitlines()[-1:] or ''}"
    try:
        got_uid, got_pid, *prefixes = json.loads(out.stdout)
    except ValueError:
        return f"unexpected output {out.stdout[:200]!r}"
    want_uid = uid if uid is not None else (0 if level == "namespaces" else os.getuid())  # --map-root-user
    if got_uid != want_uid or (level in ("bubblewrap", "namespaces") and got_pid > 2):
        return f"ran as uid {got_uid} pid {got_pid}, expected uid {want_uid} in a fresh pid namespace"
    if prefixes != [sys.prefix, sys.base_prefix]:  # e.g. an interpreter under /root, unreadable to the uid
        return f"Python there is {prefixes}, not this server's {[sys.prefix, sys.base_prefix]} (unreadable?)"
    return ""


def _describe(level: Level, uid: int | None, network: bool, pid_namespace: bool = True) -> Isolation:
    who = (f"uid {uid} (one per slot), no capabilities, no_new_privs" if uid is not None
           else "user namespace (the server's uid outside), no capabilities, no_new_privs")
    mech: list[str] = []
    warn: list[str] = []
    if level in ("bubblewrap", "namespaces"):
        mech.append(who)
        if pid_namespace:
            mech.append("pid namespace: sees only its own processes; all of them die with it")
        else:
            warn.append("no pid namespace (policy): it sees the host's processes (not other users' environments); "
                        + ("kill_sandbox kills its uid's processes and its cgroup" if uid is not None else
                           "processes it re-parents are found only through a cgroup"))
        mech += [] if network else ["network namespace: no network"]
        mech += ["ipc+uts namespaces", "mount namespace: read-only system, Python and granted paths, "
                 "writable workdir only, private /tmp, /dev/shm and /proc"]
    elif level == "uid":
        mech.append(f"uid {uid}, no capabilities, no_new_privs")
        warn += ["no pid namespace: it sees the host's processes (not other users' environments); "
                 "kill_sandbox kills every process of its uid",
                 "no mount namespace: it reads every world-readable file on the host",
                 "no network namespace: it can reach local services"]
    else:
        warn.append("no isolation: it runs as the server's user and can read the server's environment "
                    "(/proc/<pid>/environ), its files, workspace and cache, and signal it")
    if network and level != "none":
        warn.append("network allowed by the policy")
    mech.append("rlimits: core 0, nofile, fsize" + (", nproc" if uid is not None else "") + ", cpu when set")
    reason = cgroup_unavailable()
    if reason:
        warn.append(f"no cgroup ({reason}): memory is capped only by RLIMIT_AS for CPU work, "
                    "processes only by RLIMIT_NPROC")
    else:
        mech.append("cgroup v2 memory+pids per slot")
    if not cpuset_unavailable():
        mech.append("cgroup cpuset per slot: held to the core it is timed on")
    if why := syscall_filter_unavailable():
        warn.append(f"no syscall filter ({why}): a candidate can leave keys in its slot uid's keyrings, and read and "
                    "clear which files are in the page cache, for the checks after it")
    else:
        mech.append("seccomp in rooms and profiled programs: keyrings, exact page-cache residency and new "
                    "namespaces refused (state that outlives a room)")
    return Isolation(level=level, mechanisms=mech, warnings=warn)


@functools.lru_cache(maxsize=8)
def _probe(key: tuple[str, str, int, int]) -> Isolation:
    ceiling = key[0]
    uid = slot_uid(0)
    skipped: list[str] = []
    for level in LEVELS[0 if ceiling == "auto" else LEVELS.index(ceiling):]:
        why = _try_level(level, uid if level != "none" else None)
        if not why:
            iso = _describe(level, uid if level != "none" else None, network=False)
            iso.warnings += skipped
            return iso
        skipped.append(f"{level} unavailable: {why}")
    raise AssertionError("the 'none' level always runs")


_probing = threading.Lock()  # one probe at a time: checks that start together wait for the first's answer


def probe_isolation() -> Isolation:
    """The strongest level this host runs a Python program at (tried once per settings, then cached)."""
    with _probing:
        return _probe(_settings_key()).model_copy(deep=True)


# ---------------------------------------------------------------- the public entry points

_warned_weak = False


def sandboxed(argv: list[str], policy: SandboxPolicy) -> SandboxedCommand:
    """`argv` wrapped in the strongest isolation this host allows. Prepares the workdir (and, as root,
    hands it to the slot's uid) and the slot's cgroup; start it with `Popen(**cmd.popen_kwargs(fds))`
    and end it with `kill_sandbox`. One live sandbox per slot."""
    global _warned_weak
    base = probe_isolation()
    level = base.level
    uid = slot_uid(policy.slot) if level != "none" else None
    _prepare_workdir(policy.workdir, uid)
    if level == "namespaces":
        _make_ns_root()
    cgroup = _slot_cgroup(policy)
    cpuset = slot_cpuset(policy.slot)
    isolation = _describe(level, uid, policy.network, policy.pid_namespace)
    isolation.warnings += [w for w in base.warnings if w not in isolation.warnings]
    if level in ("uid", "none") and not _warned_weak:
        _warned_weak = True
        log.warning("candidate code runs with weak isolation (%s): %s", level, "; ".join(isolation.warnings))
    procs = [cgroup / "cgroup.procs"] if cgroup is not None else []
    procs += [f for f in (cpuset.procs if cpuset is not None else []) if f not in procs]
    full = _cgroup_placement(procs) + _rlimits(policy, uid, cgroup) + _level_argv(level, policy, uid) + list(argv)
    return SandboxedCommand(argv=full, env=_environment(policy), cwd=Path(os.path.realpath(policy.workdir)),
                            isolation=isolation, uid=uid, cgroup=cgroup, cpuset=cpuset)


def kill_sandbox(proc: subprocess.Popen, cmd: SandboxedCommand, timeout_s: float = 10.0) -> int | None:
    """SIGKILL everything the sandbox started and reap it; returns the exit status (None if it would not die).

    bubblewrap/namespaces: killing the outer process kills the pid namespace's init (die-with-parent /
    kill-child), and the kernel then kills every process in the namespace, daemons included. uid level:
    every process of the slot's uid is killed too. cgroup: `cgroup.kill`. none: only its process group."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for folder in {cmd.cgroup, *(f.parent for f in (cmd.cpuset.procs if cmd.cpuset else []))} - {None}:
        if folder.exists():
            kill_cgroup(folder)
    if cmd.uid is not None:
        kill_uid(cmd.uid)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def kill_uid(uid: int) -> None:
    """Kill every process of a dedicated sandbox uid: `kill(-1)` sent as that uid reaches exactly them."""
    if uid == 0 or uid == os.getuid():
        raise ValueError("refusing to kill every process of the server's own uid")
    subprocess.run([shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}",
                    "--clear-groups", "/bin/sh", "-c", "kill -KILL -1 2>/dev/null; true"], timeout=30, check=False)
