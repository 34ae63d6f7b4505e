"""The judge's handle on the candidate room: start it sandboxed, talk through the door, watch it
from outside, and end it with everything it started.

The room is a separate process tree (`python -m stitch_mcp.room`) started through
stitch_mcp.sandbox: another uid, its own pid/network/mount namespaces where the host allows, an
allow-listed environment, and no file descriptor of the judge's but its end of the door and its
output pipes. The judge is a child subreaper, so anything the room starts that escapes the room's
process group is still the judge's descendant and is killed with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from stitch_mcp.config import get_settings
from stitch_mcp.correctness import StageError
from stitch_mcp.door import (
    REPLIES,
    Attach,
    Batch,
    Call,
    Called,
    Door,
    DoorClosed,
    Done,
    Failed,
    Load,
    Loaded,
    LoadState,
    Ping,
    ReadState,
    Ready,
    Rehearse,
    Run,
)
from stitch_mcp.cpusets import unavailable as cpuset_unavailable
from stitch_mcp.crashes import classify_error_text
from stitch_mcp.outcomes import _Capture, describe_signal, malloc_env
from stitch_mcp.stage_results import BuiltExtension, CompilerDiagnostic, RoomReport, valid_records

log = logging.getLogger(__name__)
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
READY_S = 120.0  # importing torch in a fresh, sandboxed process on a busy host
CALL_S = 120.0
FLOOD_BYTES = 32 * 1024 * 1024
BUILD_TOOLS = frozenset({"ninja", "make", "nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink", "cc1", "cc1plus",
                         "gcc", "g++", "c++", "cc", "x86_64-linux-gnu-g++", "x86_64-linux-gnu-gcc", "as", "ld",
                         "collect2", "clang", "clang++"})
ROOM_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_WAIT_POLICY", "CUDA_MODULE_LOADING",
            "PYTORCH_NVML_BASED_CUDA_CHECK", "TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "CUDA_PATH", "CXX", "CC",
            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS",
            "MAX_JOBS", "CPATH", "LIBRARY_PATH", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES")


class RoomGone(Exception):
    """The room died, hung, flooded its output or broke the protocol: a verdict of `error`."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


# what each command must be answered with (a Failed aside)
EXPECTED: dict[type, type] = {Load: Loaded, Rehearse: Loaded, Call: Called, Batch: Done, Run: Done, LoadState: Done,
                              ReadState: Done, Attach: Done, Ping: Done}
# the failures a candidate's process can report about itself; anything else it claims is its runtime error
CANDIDATE_KINDS = {"import_error", "syntax_error", "compile_error", "interface", "init_error", "runtime_error",
                   "needs_gpu", "room_error", "illegal_memory_access", "launch_failure", "device_assert",
                   "cuda_oom", "host_oom"}


def _candidate_failure(reply: Failed) -> StageError:
    """The room's own account of a failure, as data: known kinds and fields only, sizes bounded."""
    extra = reply.extra
    fields = {"line": reply.line, "traceback": reply.traceback[-6000:]}
    if isinstance(extra.get("log"), str):
        fields["log"] = extra["log"][-8000:]
    for key, model in (("diagnostics", CompilerDiagnostic), ("extensions", BuiltExtension)):
        if isinstance(extra.get(key), list):  # the valid records, as the run stage's result takes them
            fields[key] = [r.model_dump() for r in valid_records(model, extra[key][:50])]
    kind = reply.error_kind if reply.error_kind in CANDIDATE_KINDS else "runtime_error"
    return StageError(kind, reply.message[:4000], **fields)


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


class RoomClient:
    def __init__(self, proc: subprocess.Popen, door: Door, workdir: Path, command: Any, deadline: float,
                 model_class: str):
        self.proc, self.door, self.workdir = proc, door, workdir
        self.model_class = model_class
        self.command = command  # the SandboxedCommand: its isolation, uid and cgroup
        self.oom_kills = _oom_kills(command)  # its slot cgroup's count before it ran (memory.events)
        self.memory_bytes = 0  # the memory cap it was started under (spawn)
        self.slot_lock: int | None = None
        self.deadline = deadline
        self.limit_s = 0.0  # the time limit behind the deadline, for the message when it runs out
        self.capture = _Capture(proc.stdout, FLOOD_BYTES, self._flooded)
        self.flooded = False
        self.ready: Ready | None = None
        self.closed = False
        self.attached = 0  # shared regions this room has mapped
        self._loading: Load | None = None  # the Load sent, whose answer `loaded` takes
        self.cuda_ahead: str | None = None  # the GPU it made its CUDA context on before its program came
        self.start_args: tuple[dict[str, Any], str, str] | None = None

    @property
    def role(self) -> str:
        """'reference' for the room of the reference's Model (eager's baseline), else 'candidate'."""
        return "reference" if self.model_class == "Model" else "candidate"

    # -------------------------------------------------------------- start and end

    @classmethod
    def spawn(cls, parent: Path, gpu: bool, cuda_ahead: str | None = None) -> "RoomClient":
        """A sandboxed room with torch imported, waiting for its program (see `assign`). It sees its
        own folder and the Python it runs on; the build cache reaches it only as file descriptors.
        `cuda_ahead`: the GPU (CUDA_VISIBLE_DEVICES, PCI bus order) whose CUDA context it makes now,
        while it waits, rather than when it loads its program (see `prestart`)."""
        parent.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="room-", dir=parent))
        judge_end, room_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {k: os.environ[k] for k in ROOM_ENV if k in os.environ and k != "CUDA_VISIBLE_DEVICES"}
        env.update({"STITCH_DOOR_FD": str(room_end.fileno()),
                    "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), *_python_path()]),
                    "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
                    "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),  # see below
                    "STITCH_ROOM": "1",  # devices.py: a room of ours on the GPU is not foreign work
                    **malloc_env(),
                    "TORCH_EXTENSIONS_DIR": str(workdir / "torch_extensions")})
        if not gpu and not cpuset_unavailable():  # timed on one core (judge._one_core): more threads only queue there
            env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        if cuda_ahead is not None:
            env.update({"CUDA_VISIBLE_DEVICES": cuda_ahead, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "STITCH_ROOM_CUDA_AHEAD": "1"})
        # OMP_WAIT_POLICY: OpenMP threads that spin after each parallel region take the cores from
        # the other room and the judge, which take turns with it: on a 2-core host a 256 KB relu
        # timed at 2-3 ms in a room instead of 0.05 ms.
        slot, slot_lock = _claim_slot()
        command = _sandboxed([sys.executable, "-m", "stitch_mcp.room"], workdir, env, gpu, slot)
        proc = subprocess.Popen(**command.popen_kwargs(pass_fds=(room_end.fileno(),)), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        room_end.close()
        _live_rooms.add(proc.pid)
        room = cls(proc, Door(judge_end, REPLIES), workdir, command, time.monotonic() + READY_S, "ModelNew")
        room.slot_lock, room.gpu, room.parent, room.cuda_ahead = slot_lock, gpu, parent, cuda_ahead
        room.memory_bytes = room_memory_bytes()  # a spare is taken only under the cap it started with (_fits)
        return room

    @classmethod
    def start(cls, spec: dict[str, Any], source: str, model_class: str = "ModelNew",
              subreaper: bool = True, cuda_ahead: str | None = None) -> "RoomClient":
        """A room for `source` (the candidate; or the reference, `model_class="Model"`, whose
        room times the eager baseline under the same conditions as the candidate's): a spare one
        started ahead of need where there is one; with `cuda_ahead`, one whose CUDA context is
        already made on that GPU if there is one. A judge becomes a subreaper; the server
        (building in a room) relies on the room's pid namespace."""
        if subreaper:
            _subreaper()
        parent, gpu = Path(spec.get("room_parent") or tempfile.gettempdir()), bool(spec.get("gpu"))
        room = ((cuda_ahead is not None and _take_spare(parent, gpu, cuda_ahead)) or _take_spare(parent, gpu)
                or cls.spawn(parent, gpu))
        room.start_args = (spec, source, model_class)
        room.model_class, room.build_root = model_class, spec["build_root"]
        (room.workdir / "program.py").write_text(source, encoding="utf-8")  # the room imports it as candidate.py
        room.limit_s = float(spec.get("room_timeout_s") or 600)
        room.deadline = time.monotonic() + room.limit_s
        return room

    def without_cuda(self) -> "RoomClient":
        """This room if it has made no CUDA context yet; else a new one for the same program in its
        place (this one closed): a check that waits for its share of GPU memory holds no context
        meanwhile (gpu_memory.held's `on_wait`)."""
        if self.cuda_ahead is None:
            return self
        self.close()
        return RoomClient.start(*self.start_args[:2], model_class=self.start_args[2])

    def kill(self) -> None:
        """SIGKILL the room's processes and go on: rooms killed together tear their CUDA contexts
        down at once; `close` then reaps them."""
        if not self.closed:
            _kill_tree(self.proc)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.door.close()
        _live_rooms.discard(self.proc.pid)
        from stitch_mcp.sandbox import kill_sandbox

        _kill_tree(self.proc)
        if _own_children is not None:
            _reap_orphans()
        kill_sandbox(self.proc, self.command, timeout_s=30)  # its pid namespace, cgroup and uid
        self.capture.thread.join(timeout=5)
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.slot_lock is not None:
            os.close(self.slot_lock)  # the slot is free for the next room

    def describe(self) -> dict[str, Any]:
        iso = self.command.isolation
        return RoomReport(isolation=iso.level, mechanisms=list(iso.mechanisms), warnings=list(iso.warnings),
                          returncode=self.proc.returncode, output=self.capture.text()).model_dump()

    def _flooded(self) -> None:
        self.flooded = True
        _kill_tree(self.proc)

    # -------------------------------------------------------------- the door

    def ask(self, command: BaseModel, fds: list[int] | None = None, deadline_s: float = CALL_S) -> Any:
        """Send a command, return the room's reply; a Failed reply raises StageError (the
        candidate's own failure), a broken door raises RoomGone (how the room ended)."""
        self.send(command, fds)
        return self.answer(command, deadline_s)

    def send(self, command: BaseModel, fds: list[int] | None = None) -> None:
        """The first half of `ask`: other work may go on before `answer` takes the reply. A room
        still starting (importing torch) finds the command waiting when it is ready."""
        try:
            self.door.send(command, fds)
        except DoorClosed as exc:
            raise self._gone(str(exc), timed_out=False) from None

    def answer(self, command: BaseModel, deadline_s: float = CALL_S) -> Any:
        """The room's reply to `command`, sent before; the room's Ready comes first (a spare room
        may still have been importing torch when the command was sent)."""
        if self.ready is None:
            self.ready = self._receive(READY_S, Ready)
        reply = self._receive(deadline_s, None)
        if isinstance(reply, Failed):
            raise _candidate_failure(reply)
        if not isinstance(reply, EXPECTED[type(command)]):
            raise RoomGone("protocol", f"the candidate's process answered {reply.kind!r} to {command.kind!r}: it "
                                       "wrote to the judge's channel itself")
        return reply

    def _receive(self, deadline_s: float, want: type | None) -> Any:
        left = min(deadline_s, self.deadline - time.monotonic())
        try:
            reply, fds = self.door.receive(max(left, 0.001))
        except DoorClosed as exc:
            raise self._gone(str(exc), timed_out=time.monotonic() >= self.deadline or "deadline" in str(exc))
        for fd in fds:  # the room has no business sending us file descriptors
            os.close(fd)
        if want is not None and not isinstance(reply, want):
            raise RoomGone("protocol", f"the room answered {reply.kind!r} out of turn")
        return reply

    def _gone(self, why: str, timed_out: bool) -> RoomGone:
        if timed_out:
            _kill_tree(self.proc)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_tree(self.proc)
        self.capture.thread.join(timeout=2)
        output, code = self.capture.text(), self.proc.returncode
        if self.flooded:
            return RoomGone("output_flood", f"the candidate flooded its output (over {FLOOD_BYTES >> 20} MB); "
                                            "remove debug printing")
        if timed_out:
            limit = f" after {self.limit_s:.0f} s" if self.limit_s else ""
            return RoomGone("timeout", f"timed out{limit} waiting for the candidate (a hung kernel, an infinite "
                                       "loop, a deadlock or a very slow lazy build)")
        found = classify_error_text(output)
        if code is not None and code > 128 and code - 128 < 65:  # the sandbox passes on 128 + signal
            code = -(code - 128)
        if code is not None and code < 0:
            kind, message = describe_signal(-code)
            if found and kind in ("abort", "killed"):
                kind, message = found
            elif kind == "killed" and _oom_kills(self.command) > self.oom_kills:
                kind, message = "host_oom", (f"the candidate's process was killed for going over the room's memory "
                                             f"cap ({self.memory_bytes / 2 ** 30:.3g} GB, STITCH_ROOM_MEMORY_GB)")
            return RoomGone(kind, message.replace("the worker", "the candidate's process"))
        if found:
            return RoomGone(*found)
        return RoomGone("os_exit", f"the candidate's process exited (status {code}) without reporting a result "
                                   f"({why}): os._exit or sys.exit called by the candidate, or a fatal error")

    def send_load(self, device: str, init_args: list[Any], n_inputs: int | None = None) -> None:
        """Ask the room to import its program and build its model; `loaded` takes the answer, so
        two rooms can load (and start CUDA) at once."""
        # the candidate's builds go to its own room only: the reference's room times eager
        prebuilt, fds = _prebuilt(Path(self.build_root)) if self.model_class == "ModelNew" else ({}, [])
        self._loading = Load(program="program.py", model_class=self.model_class, init_args=init_args,
                             n_inputs=n_inputs, device=device, visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
                             device_order=os.environ.get("CUDA_DEVICE_ORDER"),
                             prebuilt=prebuilt)
        try:
            self.send(self._loading, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def loaded(self) -> Loaded:
        return self.answer(self._loading, deadline_s=max(self.deadline - time.monotonic(), 1.0))

    def build(self, deadline_s: float) -> Loaded:
        """Import the candidate without building its model: its extensions are built (into the
        room's own folder, `build/`) and nothing of it runs past its module's top level."""
        prebuilt, fds = _prebuilt(Path(self.build_root))
        try:
            return self.ask(Load(program="program.py", model_class=self.model_class, build_model=False,
                                 visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"), prebuilt=prebuilt),
                            fds, deadline_s=deadline_s)
        finally:
            for fd in fds:
                os.close(fd)

    def rehearse(self, reference_source: str, deadline_s: float, idle_limit_s: float) -> Loaded:
        """After `build`: the candidate's model built and called once on the meta device (door.Rehearse),
        so that what it builds on first use is built now. A first call that compiles may take the
        whole `deadline_s`; time with no compiler in the room counts against `idle_limit_s` (a call
        that loops without building would otherwise hold the build stage for its whole limit)."""
        command = Rehearse(reference_source=reference_source)
        self.send(command)
        end, idle = time.monotonic() + deadline_s, 0.0
        while self.ready is not None:  # a room still starting answers Ready first: `answer` reads it
            step = min(1.0, end - time.monotonic())
            if step <= 0 or select.select([self.door.sock], [], [], step)[0]:
                break
            if not self._compiling():
                idle += step
            if idle >= idle_limit_s:
                self.limit_s = idle_limit_s
                raise self._gone("the rehearsal ran without compiling", timed_out=True)
        return self.answer(command, max(end - time.monotonic(), 0.001))

    def call(self, command: Call) -> Called:
        return self.ask(command)

    # -------------------------------------------------------------- seen from outside

    def _room_processes(self) -> list[Any]:
        import psutil

        try:
            return psutil.Process(self.proc.pid).children(recursive=True) + [psutil.Process(self.proc.pid)]
        except psutil.Error:
            return []

    def _compiling(self) -> bool:
        """Whether a compiler or build tool runs in the room now (its process names, seen from outside)."""
        for proc in self._room_processes():
            try:
                if proc.name() in BUILD_TOOLS:
                    return True
            except Exception:  # gone since the listing
                continue
        return False

    def cpu_meter(self) -> Callable[[], float]:
        """A reading of the CPU seconds the room's processes have used so far: their threads', and
        the children's they reaped. The kernel's accounting, read from outside:
        nothing in the room can change it."""
        import psutil

        def used() -> float:  # the processes as they are at each reading: a child forked since counts
            total = 0.0
            for proc in self._room_processes():
                try:
                    t = proc.cpu_times()
                    total += t.user + t.system + t.children_user + t.children_system
                except psutil.Error:
                    pass
            return total
        return used

    @property
    def held(self) -> bool:
        """Whether `pin` holds the room by its slot's cpuset, which nothing in it can widen or leave:
        it runs as another uid, with no network (a service it could hand work to, unseen by its
        cgroup's CPU), at the namespace levels of stitch_mcp.sandbox."""
        command = self.command
        return (getattr(command, "cpuset", None) is not None and command.uid is not None
                and command.isolation.level in ("bubblewrap", "namespaces"))

    def cpu_ms(self) -> float:
        """The CPU time the room's processes have used, from its slot's cgroup (only where `held`)."""
        return self.command.cpuset.used_ms()

    def pin(self, cpus: set[int]) -> bool:
        """Run every thread of the room's processes on `cpus`: by the slot's cpuset where it has one
        (the processes it starts later too), else each thread's affinity; False where this host does
        not let us (another uid's threads need CAP_SYS_NICE)."""
        import psutil

        if self.held:
            try:
                self.command.cpuset.hold(cpus)
                return True
            except OSError as exc:  # then no CPU clock either: the caller is told it could not
                log.warning("could not hold room %s to cores %s by its cpuset: %s", self.proc.pid, cpus, exc)
                return False
        ok = True
        for proc in self._room_processes():
            try:
                for thread in proc.threads():
                    os.sched_setaffinity(thread.id, cpus)
            except (OSError, psutil.Error):
                ok = False
        return ok

    def process_findings(self) -> list[dict[str, Any]]:
        """Processes the candidate started that are still running, seen from the judge's side."""
        from stitch_mcp.integrity import finding

        procs = self._room_processes()
        helpers = {p.pid for p in procs if _is_sandbox(p) or _is_multiprocessing_helper(p)}
        rooms = {p.pid for p in procs if p.pid not in helpers and _is_room(p)}
        # a fork of the room runs the room's command line: it is told apart by its parent
        stray = [p for p in procs if p.pid not in helpers and (p.pid not in rooms or _ppid(p) in rooms)]
        if stray:
            names = sorted({_name(p) for p in stray})
            return [finding("background_processes", f"the candidate started {len(stray)} process(es) still "
                                                    f"running after its calls ({', '.join(names[:4])})")]
        return []


def _name(p) -> str:
    try:
        return p.name()
    except Exception:
        return "?"


def _is_room(p) -> bool:
    """Runs the room's command line (a sandbox helper's names it too: see _is_sandbox)."""
    try:
        return "stitch_mcp.room" in " ".join(p.cmdline())
    except Exception:
        return False


def _is_sandbox(p) -> bool:
    """The sandbox's own helpers around the room (bwrap, unshare, setpriv); a process gone or
    unreadable counts as one (it is nothing running)."""
    try:
        cmd = p.cmdline()
    except Exception:
        return True
    return bool(cmd) and (" ".join(cmd).startswith(("bwrap", "unshare", "setpriv")) or
                          os.path.basename(cmd[0]) in ("bwrap", "unshare", "setpriv"))


# Python's multiprocessing starts these once and keeps them for the process's life, a pool closed or
# not: an honest candidate that used a spawn or forkserver pool in __init__ was called a background
# process (red team, 2026-11-28). They die with the room; their CPU is the room's, like any process's.
MULTIPROCESSING_HELPERS = ("from multiprocessing.resource_tracker import main",
                           "from multiprocessing.forkserver import main")


def _is_multiprocessing_helper(p) -> bool:
    try:
        return any(helper in " ".join(p.cmdline()) for helper in MULTIPROCESSING_HELPERS)
    except Exception:
        return False


def _ppid(p) -> int | None:
    try:
        return p.ppid()
    except Exception:
        return None


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil

    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for k in kids:
        try:
            k.kill()
        except psutil.Error:
            pass


_live_rooms: set[int] = set()  # pids of the rooms this judge has open
_own_children: set[int] | None = None  # the judge's children before any room (its watchdog)


def _reap_orphans() -> None:
    """Kill what rooms left re-parented to us (a judge is a subreaper): any child of ours that is
    neither a live room nor one we had before the first room started, and collect exactly those."""
    import psutil

    try:
        children = psutil.Process().children()
    except psutil.Error:
        return
    for child in children:
        if child.pid in _live_rooms or child.pid in (_own_children or set()):
            continue
        try:
            for k in child.children(recursive=True) + [child]:
                k.kill()
            os.waitpid(child.pid, 0)
        except (psutil.Error, ChildProcessError):
            pass


SLOTS = 256  # dedicated uids (uid base + slot) that rooms on this host may take


def _claim_slot() -> tuple[int, int]:
    """A sandbox slot (a dedicated uid) no other room on this host holds, whichever server or
    data folder it belongs to: (slot, the fd of its held lock). A slot's uid is killed whole when
    its room ends, so two rooms must never share one."""
    import fcntl

    from stitch_mcp.sandbox import open_slot_lock

    for slot in range(1, SLOTS):  # slot 0: the default of direct sandboxed() users (tests, tools)
        fd = open_slot_lock(slot)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return slot, fd
        except BlockingIOError:
            os.close(fd)
    raise RuntimeError(f"all {SLOTS} sandbox slots are taken")


def _toolchain() -> list[str]:
    """Install prefixes of the compilers a build calls (e.g. /opt/gcc for /opt/gcc/bin/g++)."""
    prefixes = []
    for tool in (os.environ.get("CXX", ""), os.environ.get("CC", ""), "c++", "g++", "gcc", "nvcc", "ninja"):
        found = shutil.which(tool) if tool else None
        if found:
            prefixes.append(str(Path(os.path.realpath(found)).parent.parent))
    if os.environ.get("CUDA_HOME"):
        prefixes.append(os.environ["CUDA_HOME"])
    return [p for p in dict.fromkeys(prefixes) if p not in ("/", "/usr") and os.path.isdir(p)]


def _python_path() -> list[str]:
    """PYTHONPATH folders the judge imports from (where stitch-mcp's own dependencies may live)."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isdir(p)]


def _sandboxed(argv: list[str], workdir: Path, env: dict[str, str], gpu: bool, slot: int,
               tools: tuple[str, ...] = ()):
    """The room's command line inside the strongest sandbox this host allows: it sees its own
    folder (writable), and the Python, compilers and `tools` it runs on (read-only)."""
    from stitch_mcp.sandbox import SandboxPolicy, sandboxed

    grants = [*_python_path(), *_toolchain(), *tools]
    policy = SandboxPolicy(workdir=workdir, read_only=[PACKAGE_ROOT, *map(Path, grants)],
                           gpu=gpu, env=env, slot=slot, pids_max=512, memory_bytes=room_memory_bytes())
    return sandboxed(argv, policy)


def _oom_kills(command: Any) -> int:
    """How many of its processes its slot's cgroup v2 has OOM-killed so far (0 without one)."""
    try:
        events = (command.cgroup / "memory.events").read_text().split()
        return int(events[events.index("oom_kill") + 1])
    except (AttributeError, TypeError, OSError, ValueError, IndexError):
        return 0


def room_memory_bytes() -> int:
    """What one room's processes may use: STITCH_ROOM_MEMORY_GB, else half the host's memory. With
    no cap a room took a 24 GB host down to its last 300 MB in 31 s: that starves the server, and
    drops the page cache every room shares, which a room could then mark again for the checks after
    it (red team, 2026-11-28). Only a cgroup v2 slot holds the room whole; RLIMIT_AS (without one)
    holds each process alone, and not its tmpfs files or memfds (8.8 GB under a 2 GB cap, red team)."""
    gb = get_settings().room_memory_gb
    return int(gb * 2 ** 30) if gb else _host_memory_bytes() // 2


@functools.cache
def _host_memory_bytes() -> int:
    """The host's memory, read once (each room's spawn and every spare taken asks for the cap)."""
    import psutil

    return psutil.virtual_memory().total


@contextlib.contextmanager
def candidate_sandbox(argv: list[str], workdir: Path, env: dict[str, str], gpu: bool):
    """A sandboxed command for other processes that run candidate code (the profilers): the same
    sandbox as a room's, on a slot held until the block ends; it also sees the install of the
    tool it starts (argv[0], e.g. ncu)."""
    from stitch_mcp.cuda_tools import tool_install_dirs

    slot, lock = _claim_slot()
    try:
        yield _sandboxed(argv, workdir, env, gpu, slot, tuple(tool_install_dirs(argv[0])))
    finally:
        os.close(lock)


def _prebuilt(scope: Path) -> tuple[dict[str, int], list[int]]:
    """The extensions built earlier for this candidate source, as open files: {key: index of its
    fd among those sent}. A room gets file descriptors, never a path into the cache (a directory
    descriptor would let it walk up out of its mount namespace)."""
    prebuilt, fds = {}, []
    objects = scope / "objects"
    for so in sorted(objects.glob("*/*.so")) if objects.is_dir() else []:
        if (so.parent / "done").is_file() and not so.is_symlink() and len(fds) < 12:
            prebuilt[so.parent.name] = len(fds)
            fds.append(os.open(so, os.O_RDONLY))
    return prebuilt, fds


_spares: list[RoomClient] = []
_spares_lock = threading.Lock()


def prestart(parent: Path, gpu: bool, count: int, subreaper: bool = False, cuda_ahead: str | None = None) -> None:
    """Start rooms ahead of need (each imports torch meanwhile; with `cuda_ahead`, also makes its
    CUDA context on that GPU: 0.3-0.5 s of each check's start on an H100); `start` takes them."""
    if subreaper:
        _subreaper()
    with _spares_lock:
        live = [r for r in _spares if r.proc.poll() is None and _fits(r, parent, gpu, cuda_ahead)]
        for _ in range(count - len(live)):
            _spares.append(RoomClient.spawn(parent, gpu, cuda_ahead))


def _take_spare(parent: Path, gpu: bool, cuda_ahead: str | None = None) -> "RoomClient | None":
    with _spares_lock:
        for room in list(_spares):
            if room.proc.poll() is not None:
                _spares.remove(room)
                room.close()
            elif _fits(room, parent, gpu, cuda_ahead):
                _spares.remove(room)
                return room
    return None


def _fits(room: "RoomClient", parent: Path, gpu: bool, cuda_ahead: str | None) -> bool:
    """Whether a spare is the room a check asks for, under the memory cap it would be started with."""
    return (room.parent == parent and room.gpu == gpu and room.cuda_ahead == cuda_ahead
            and room.memory_bytes == room_memory_bytes())


def drop_spares() -> None:
    with _spares_lock:
        while _spares:
            _spares.pop().close()


def _subreaper() -> None:
    global _own_children
    if _own_children is None:
        import psutil

        _own_children = {c.pid for c in psutil.Process().children()}
        _become_subreaper()
