"""The worker zygote: one trusted process that imports what every worker needs once (torch, the
judge, torch.compile's compiler) and forks the server's workers from itself on request.

Why: every run stage and baseline runs in a fresh worker process (stitch_mcp.worker), and a fresh
Python importing torch, the judge and the meta device's registrations takes 5-8 s of a core on an
H100 host. Twelve checks at once started their workers together and spent a third of the host's CPU
importing (tools/gpu/cpu_by_kind.py: "workers before their order", 1,078 of 3,342 CPU seconds, and
judges waited 8 s on average, 34 s at the start, for theirs). A fork of a process that has imported
it all costs milliseconds and shares its pages.

What is forked is a fresh worker as `python -m stitch_mcp.worker --spare` would be once its imports
are done: its own session, the pipes and environment the server gives it, not the zygote's socket
or its other workers' pidfds (what the imports opened stays: the libraries use it), no GPU device
file open and the CUDA driver not started (the zygote shuts NVML down and never starts CUDA, so a
worker still reads its own CUDA_VISIBLE_DEVICES), the imports' objects frozen out of its collector. No candidate code ever runs in the zygote or before a worker's order; the
candidate runs in rooms a worker starts (stitch_mcp.room). The zygote's socket reaches only the
server: every worker closes it first.

The door between the server (`Zygote`) and the zygote (`serve`) is a SOCK_SEQPACKET socket pair:
`SpawnRequest` (with the worker's descriptors attached) one way; `Ready`, `Spawned` and `Exited`
(the zygote reaps its workers and sends each one's exit status) the other. A worker forked from the
zygote is represented in the server by `ForkedProcess`, the part of subprocess.Popen that
stitch_mcp.worker uses. If the zygote dies, the server starts workers afresh (and a new zygote for
the next); a worker whose status went with it is waited for through a pidfd, its status unknown.
"""

from __future__ import annotations

import gc
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

log = logging.getLogger(__name__)

MAX_MESSAGE = 1 << 20  # an environment of a few KB, with room to spare
MAX_FDS = 8
READY_TIMEOUT_S = 120.0  # the zygote's imports, on a loaded host
SPAWN_TIMEOUT_S = 30.0  # a fork, once the zygote is ready
LOST_STATUS = -int(signal.SIGKILL)  # the returncode of a worker whose exit status went with its zygote


class SpawnRequest(BaseModel):
    """Fork a worker: its environment, and where each attached descriptor goes in it, in order."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["spawn"] = "spawn"
    env: dict[str, str]
    fd_targets: list[int]


class Ready(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["ready"] = "ready"
    seconds: float  # the zygote's imports
    unfit: str = ""  # why its forks would not be fresh workers (then the server starts them afresh)


class Spawned(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["spawned"] = "spawned"
    pid: int | None = None
    error: str = ""


class Exited(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["exited"] = "exited"
    pid: int
    returncode: int  # as Popen's: the exit code, or minus the signal that ended it


ZygoteMessage = TypeAdapter(Annotated[Ready | Spawned | Exited, Field(discriminator="kind")])


# ---------------------------------------------------------------- the server's side


class ForkedProcess:
    """A worker the zygote forked, as stitch_mcp.worker uses a subprocess.Popen: pid, stdin, stdout,
    poll(), wait(), returncode."""

    def __init__(self, pid: int, stdin, stdout):
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.args = ["stitch-worker (forked by the zygote)"]
        self.returncode: int | None = None
        self._exited = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        assert self.returncode is not None
        return self.returncode

    def set_exited(self, returncode: int) -> None:
        if self.returncode is None:
            self.returncode = returncode
            self._exited.set()

    def wait_lost(self) -> None:
        """The zygote went away before this worker's status: wait for the process itself (reaped by
        whoever inherited it), then report LOST_STATUS."""
        def watch() -> None:
            try:
                fd = os.pidfd_open(self.pid)
            except OSError:  # gone already
                self.set_exited(LOST_STATUS)
                return
            try:
                select.select([fd], [], [])
            finally:
                os.close(fd)
            self.set_exited(LOST_STATUS)

        threading.Thread(target=watch, name=f"zygote-lost-{self.pid}", daemon=True).start()


class Zygote:
    """The server's handle on a zygote process: `spawn` forks a worker from it."""

    def __init__(self, env: dict[str, str], cwd: str):
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stitch_mcp.worker", "--zygote", str(theirs.fileno()), "--spare"], cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
            pass_fds=(theirs.fileno(),), env=env, close_fds=True)
        theirs.close()
        self._lock = threading.Lock()  # one spawn at a time: replies come in the order asked
        self._replies: list[Spawned] = []
        self._reply = threading.Condition()
        self._ready = threading.Event()
        self._children: dict[int, ForkedProcess] = {}
        self._early: dict[int, int] = {}  # exits seen before the server registered the worker
        self.alive = True
        self.unfit = ""  # the zygote's own word that its forks would not be fresh workers
        threading.Thread(target=self._read, name="zygote-reader", daemon=True).start()

    def spawn(self, env: dict[str, str], fds: dict[int, int], stdin_w: int, stdout_r: int) -> ForkedProcess:
        """Fork a worker with `env`, our descriptor `fds[target]` at `target` in it; `stdin_w` and
        `stdout_r` are our ends of its stdin and stdout pipes (owned by the result). Raises
        RuntimeError when the zygote cannot (the caller starts the worker afresh)."""
        with self._lock:
            if not self._ready.wait(READY_TIMEOUT_S) or not self.alive:
                raise RuntimeError("the worker zygote is not ready")
            request = SpawnRequest(env=env, fd_targets=list(fds))
            try:
                socket.send_fds(self._sock, [request.model_dump_json().encode()], list(fds.values()))
            except OSError as exc:
                raise RuntimeError(f"the worker zygote is gone ({exc})") from exc
            with self._reply:
                if not self._reply.wait_for(lambda: self._replies or not self.alive, SPAWN_TIMEOUT_S) \
                        or not self._replies:
                    raise RuntimeError("the worker zygote did not answer")
                answer = self._replies.pop(0)
            if answer.pid is None:
                raise RuntimeError(f"the worker zygote could not fork: {answer.error}")
            proc = ForkedProcess(answer.pid, os.fdopen(stdin_w, "wb"), os.fdopen(stdout_r, "rb"))
            with self._reply:
                self._children[proc.pid] = proc
                if proc.pid in self._early:
                    proc.set_exited(self._early.pop(proc.pid))
                lost = not self.alive  # gone between its answer and now: _lost did not see this one
            if lost:
                proc.wait_lost()
            return proc

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            try:
                msg = ZygoteMessage.validate_json(data)
            except ValueError:
                log.error("the worker zygote sent %r: no longer using it", data[:200])
                break
            with self._reply:
                if isinstance(msg, Ready):
                    if msg.unfit:
                        log.warning("worker zygote not used: %s", msg.unfit)
                        self.unfit = msg.unfit
                        break
                    log.info("worker zygote ready (imports took %.1f s)", msg.seconds)
                    self._ready.set()
                elif isinstance(msg, Spawned):
                    self._replies.append(msg)
                    self._reply.notify_all()
                elif msg.pid in self._children:
                    self._children.pop(msg.pid).set_exited(msg.returncode)
                else:
                    self._early[msg.pid] = msg.returncode
        self._lost()

    def _lost(self) -> None:
        with self._reply:
            was_alive, self.alive = self.alive, False
            orphans = list(self._children.values())
            self._children.clear()
            self._reply.notify_all()
        self._ready.set()  # a spawn waiting for it learns it is gone
        if was_alive and orphans:
            log.warning("the worker zygote exited; %d worker(s) it started are waited for without their "
                        "exit status", len(orphans))
        for proc in orphans:
            proc.wait_lost()

    def close(self) -> None:
        """Stop the zygote (its workers go on: each has its own lifeline to the server)."""
        self.alive = False
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------- the zygote's side


def set_name(name: bytes) -> None:
    """This process's name in /proc/PID/comm (what ps and the tools show)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name, 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def import_worker_modules():
    """What every worker stage needs, imported: by a fresh worker before its order
    (stitch_mcp.worker._wait_for_order), by the zygote once for all its forks. Also the meta device's
    first operation, which imports its registrations (4.2-4.8 s of an already-built check on an H100
    host, in gpu_memory.estimate_need). None of it starts the CUDA driver. Returns torch."""
    import torch
    import torch.utils.cpp_extension  # noqa: F401

    import stitch_mcp.judge  # noqa: F401

    torch.empty(1, device="meta").relu()
    return torch


def _preload() -> None:
    """What a worker would import before its order (import_worker_modules), and torch.compile's
    compiler for the baseline workers; none of it starts the CUDA driver or a thread pool. NVML,
    which the workers' warm-up starts, is left to each worker."""
    import warnings

    import_worker_modules()
    try:
        from stitch_mcp.correctness import _import_compiler

        _import_compiler()
    except Exception:  # the baseline worker imports it itself
        pass
    # torch's import starts one native thread; a fork keeps only the forking one, as torch's own
    # DataLoader workers do. Python 3.12 warns about forking with more than one: known and intended.
    warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks.*")
    _shut_nvml()
    # What the imports made stays for the life of every fork: out of the collector's sight, a
    # worker's collections (some during timing) scan only what it made itself, and its pages stay shared.
    gc.collect()
    gc.freeze()


def _shut_nvml() -> None:
    """NVML started by an import (torch.cuda.is_available() asks it, PYTORCH_NVML_BASED_CUDA_CHECK)
    holds /dev/nvidia* open; forks sharing those descriptors with each other made torch.cuda see no
    GPU in 2 of 56 checks on an H100 (they judged on the CPU). Shut it down: each worker starts its own."""
    import ctypes

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return  # never loaded
    for _ in range(64):  # once per nvmlInit that was not shut down
        if nvml.nvmlShutdown() != 0:  # NVML_ERROR_UNINITIALIZED: done
            break


def gpu_descriptors() -> list[str]:
    """The GPU device files this process holds open (a fork would share them)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/nvidia"):
            found.append(target)
    return found


def serve(sock_fd: int, worker_main: Callable[[], int | None]) -> None:
    """The zygote's loop: fork a worker per request (which runs `worker_main`, stitch_mcp.worker's
    spare, waiting for its order), report each one's exit, end with the server."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the server's terminal is the server's
    sock = socket.socket(fileno=sock_fd)
    t0 = time.monotonic()
    try:
        _preload()
    except Exception as exc:  # workers started afresh report it
        print(f"worker zygote: preloading failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    held = gpu_descriptors()
    unfit = f"its imports left GPU device files open ({', '.join(sorted(set(held)))})" if held else ""
    sock.send(Ready(seconds=round(time.monotonic() - t0, 2), unfit=unfit).model_dump_json().encode())
    if unfit:
        os._exit(0)
    workers: dict[int, int] = {}  # pidfd -> pid
    while True:
        ready, _, _ = select.select([sock.fileno(), *workers], [], [])
        for fd in ready:
            if fd != sock.fileno():
                pid = workers.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                sock.send(Exited(pid=pid, returncode=os.waitstatus_to_exitcode(status)).model_dump_json().encode())
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
            except OSError:
                data, fds = b"", []
            if not data:  # the server is gone; its workers end through their own lifelines
                os._exit(0)
            sock.send(_spawn(data, fds, sock, workers, worker_main).model_dump_json().encode())


def _spawn(data: bytes, fds: list[int], sock: socket.socket, workers: dict[int, int],
           worker_main: Callable[[], int | None]) -> Spawned:
    try:
        request = SpawnRequest.model_validate_json(data)
        if len(request.fd_targets) != len(fds):
            raise ValueError(f"{len(fds)} descriptors for {len(request.fd_targets)} targets")
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _become_worker(request, fds, [sock.fileno(), *workers], worker_main)
        workers[os.pidfd_open(pid)] = pid
        return Spawned(pid=pid)
    except Exception as exc:
        return Spawned(error=f"{type(exc).__name__}: {exc}")
    finally:
        for fd in fds:
            os.close(fd)


def _become_worker(request: SpawnRequest, fds: list[int], zygote_fds: list[int],
                   worker_main: Callable[[], int | None]) -> None:
    """In the forked child: become a fresh worker waiting for its order; never returns."""
    import fcntl

    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        floor = max([*request.fd_targets, *fds, *zygote_fds]) + 1  # no dup2 below overwrites one still to move
        staged = [fcntl.fcntl(fd, fcntl.F_DUPFD, floor) for fd in fds]
        for fd in [*fds, *zygote_fds]:
            os.close(fd)
        for fd, target in zip(staged, request.fd_targets):
            if fd != target:
                os.dup2(fd, target)
        for fd in staged:
            if fd not in request.fd_targets:
                os.close(fd)
        os.environ.clear()
        os.environ.update(request.env)
        import random

        random.seed()  # not the zygote's state, shared by every worker it forks

        set_name(os.path.basename(sys.executable).encode()[:15])  # a fresh worker's name, not the zygote's
        code = worker_main() or 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
