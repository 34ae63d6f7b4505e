"""Trusted worker processes: the judge of a run stage (stitch_mcp.judge) and the baseline worker.
They run our code and the task's reference, never candidate code: that runs only in sandboxed
rooms (stitch_mcp.room), which a judge starts and talks to through the door.

Parent side (`run_worker`): start `python -m stitch_mcp.worker` in a fresh session (its own process
group) and working directory, with its stdout/stderr captured (head and tail kept, never reaching our
own stdout, which is the MCP stream), a wall-clock limit per stage, and a dedicated pipe on which the
worker sends JSON events (stage started, progress, result). Whatever happens to the worker, the
parent kills its whole process group and classifies the outcome (stitch_mcp.outcomes).

Spare workers: starting Python and importing torch takes 4-6 s on a GPU machine. So the parent keeps
`settings.spare_workers` workers per GPU started ahead of need, each with torch imported and its
two rooms (candidate, reference) starting in their sandboxes: no device chosen, no candidate seen.
`run_worker` hands one its stage (spec, working directory, environment) over stdin and starts the
next spare. Each process runs exactly one stage and exits. A spare in which something had started
the CUDA driver (which reads CUDA_VISIBLE_DEVICES once) re-executes itself as a fresh worker rather
than run on a GPU its order did not name. A spare's command line ends in `--spare`; once given its
stage it names itself `stitch-worker` (/proc/PID/comm).

Child side (`main`): apply resource limits, then dispatch to the stage function. This module imports
nothing heavy at top level; stage modules import torch inside the worker.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stitch_mcp.config import get_settings, overrides_env
from stitch_mcp.crashes import CRASH_PATTERNS, classify_error_text  # noqa: F401  (re-exported)
from stitch_mcp.outcomes import WorkerResult, _Capture, describe_signal, malloc_env  # noqa: F401  (re-exported)
from stitch_mcp.events import COMPILING_BASELINE, WAITING_FOR_CANDIDATES, emit, stage  # noqa: F401  (emit, stage: re-exported)
from stitch_mcp.stage_results import StageResult, read_stage_result
from stitch_mcp.zygote import ForkedProcess, Zygote, import_worker_modules, set_name as _set_name

log = logging.getLogger(__name__)

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
WorkerProcess = subprocess.Popen | ForkedProcess  # started afresh, or forked from the zygote
FLOOD_BYTES = 32 * 1024 * 1024  # more candidate output than this is a flood: the worker is killed

# ------------------------------------------------------------------ outcome classification

# ------------------------------------------------------------------ parent side


def _descendants(pid: int) -> list[int]:
    """Child processes (recursively), to kill those that left the process group."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(proc: WorkerProcess) -> None:
    """SIGKILL the worker, its process group and any descendants that left the group."""
    if proc.poll() is not None:
        # The worker itself is gone; its group may still hold children (e.g. ninja, nvcc).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return
    kids = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for k in kids:
        try:
            os.kill(k, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_marked(token: str, exclude: int | None = None) -> int:
    """SIGKILL every live process whose environment carries STITCH_WORKER_TOKEN=token: a worker's
    descendants inherit it, also those that left its process group and session (setsid, double
    fork) or were orphaned when the worker exited first. Returns how many were killed."""
    import psutil

    killed = 0
    for _ in range(5):  # again, in case one forked while we scanned
        found = 0
        for proc in psutil.process_iter():
            if proc.pid in (os.getpid(), exclude):
                continue
            try:
                if proc.environ().get("STITCH_WORKER_TOKEN") != token:
                    continue
                proc.kill()
                found += 1
            except psutil.Error:
                continue
        killed += found
        if not found:
            break
    return killed


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(PACKAGE_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # the judge takes turns with its rooms (judge_room.py)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("CUDA_MODULE_LOADING", "LAZY")
    # torch.cuda.is_available() through NVML: asking the CUDA runtime starts the driver, which then
    # ignores a CUDA_VISIBLE_DEVICES set later (a spare worker learns its GPU after importing torch)
    env.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    # inductor's pool of compile processes, one per core, in every worker that compiles torch.compile's
    # baseline took 11% of an H100 host's CPU from the builds (16 each, 138 at once): one thread, unless
    # set otherwise. Rooms inherit it (ROOM_ENV): a candidate's own torch.compile compiles in-process.
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    inductor_dir = _inductor_dir()
    if inductor_dir:
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_dir)
    env.update(malloc_env())  # the judge's fresh inputs, as its rooms' tensors
    env.update(overrides_env())  # the server's command-line settings (a room's memory cap, its sandbox)
    env.update(extra or {})
    return env


def _inductor_dir() -> str | None:
    """The folder of inductor's cache for the judges and baseline workers (the code it compiles for
    torch.compile's baseline, which they load and run): in the server's cache dir, only the server's
    user's. Inductor's default, /tmp/torchinductor_<user>, is a folder that a candidate sandboxed
    only by another uid (sandbox level "uid": the host's /tmp) could make first and fill. Rooms do
    not inherit it (judge_room.ROOM_ENV). None where it cannot be made: inductor's default then."""
    try:
        from stitch_mcp.sandbox import private_folder

        return str(private_folder(get_settings().inductor_dir))
    except Exception:  # a bad setting, or a folder not ours (private_folder), must not stop checks
        return None


KILL_GRACE_S = 30
WORKING_NAME = b"stitch-worker"


@dataclass
class _Started:
    """A started worker process and the parent's ends of its pipes."""

    proc: WorkerProcess
    events_fd: int  # read end of the event pipe
    lifeline_fd: int  # the only write end of the lifeline
    token: str
    fd_env: dict[str, str]

    def discard(self) -> None:
        kill_tree(self.proc)
        kill_marked(self.token)
        for fd in (self.events_fd, self.lifeline_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                stream.close()


def _start(rooms: bool = True, spare: bool = False) -> _Started:
    """A new worker, with what every stage needs imported: forked from the zygote, or a fresh Python
    where there is none. `rooms`: it also starts the two rooms a run stage judges with (a worker
    started for another stage would only end them again); a `spare` one's rooms also make their CUDA
    context while they wait where devices.spare_cuda_ahead_device says so (the memory shares leave
    room for as many as there are spares)."""
    from stitch_mcp.devices import spare_cuda_ahead_device

    r_fd, w_fd = os.pipe()
    # Lifeline: the worker holds the read end, we hold the only write end. If this process dies
    # (SIGKILL, OOM killer), the worker's watchdog reads EOF and kills the worker's process group,
    # which lives in its own session and would otherwise outlive us.
    life_r, life_w = os.pipe()
    token = f"{os.getpid()}-{uuid.uuid4().hex}"  # inherited by everything the worker starts
    fd_env = {"STITCH_EVENT_FD": str(w_fd), "STITCH_LIFELINE_FD": str(life_r), "STITCH_WORKER_TOKEN": token,
              "STITCH_SPARE_ROOMS": _room_parent() if rooms else "",
              "STITCH_ROOM_CUDA_AHEAD": (spare_cuda_ahead_device() or "") if rooms and spare else ""}
    env = worker_env(fd_env)
    proc = _forked(env, (w_fd, life_r)) or subprocess.Popen(
        [sys.executable, "-m", "stitch_mcp.worker", "--spare"], cwd=PACKAGE_ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(w_fd, life_r),
        env=env, close_fds=True)
    os.close(w_fd)
    os.close(life_r)
    return _Started(proc, r_fd, life_w, token, fd_env)


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()
_zygotes_lost = 0
ZYGOTE_TRIES = 3  # zygotes lost before this process starts every worker afresh


def _forked(env: dict[str, str], keep: tuple[int, ...]) -> ForkedProcess | None:
    """A worker forked from the zygote (started on first use), with our descriptors `keep` at the
    same numbers in it and stdin/stdout as Popen's PIPE/STDOUT; None where workers start afresh."""
    global _zygote, _zygotes_lost
    try:
        if not get_settings().fork_workers or _zygotes_lost >= ZYGOTE_TRIES:
            return None
    except Exception:  # a bad setting must not stop checks
        return None
    with _zygote_lock:
        if _zygote is None or not _zygote.alive:
            # its forks' /proc/PID/environ is the zygote's: the token marks them as ours (devices.py)
            _zygote = Zygote(worker_env({"STITCH_WORKER_TOKEN": f"zygote-{os.getpid()}-{uuid.uuid4().hex}"}),
                             str(PACKAGE_ROOT))
        zygote = _zygote
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        return zygote.spawn(env, {0: in_r, 1: out_w, 2: out_w, **{fd: fd for fd in keep}}, in_w, out_r)
    except RuntimeError as exc:
        log.warning("%s: starting a worker afresh", exc)
        os.close(in_w)
        os.close(out_r)
        with _zygote_lock:
            if _zygote is zygote:  # an unfit zygote's successors would be unfit too
                _zygote, _zygotes_lost = None, ZYGOTE_TRIES if zygote.unfit else _zygotes_lost + 1
        zygote.close()
        return None
    finally:
        os.close(in_r)
        os.close(out_w)


def drop_zygote() -> None:
    """Stop the zygote (at exit; the workers it forked go on until their stages end)."""
    global _zygote
    with _zygote_lock:
        zygote, _zygote = _zygote, None
    if zygote is not None:
        zygote.close()


def _room_parent() -> str:
    """Where a spare worker starts the candidate rooms it will judge (see _wait_for_order)."""
    try:
        return str(Path(get_settings().cache_dir).expanduser() / "work")
    except Exception:
        return ""


_spares: list[_Started] = []
_spares_lock = threading.Lock()


def _gpu_count() -> int:
    """GPUs this host has for us (device files; settings.gpus narrows them), without NVML. A
    container's device files keep the host's numbers, so only their count is used."""
    from stitch_mcp.cuda_tools import nvidia_devices

    found = len(nvidia_devices())
    try:
        wanted = len(get_settings().gpu_indices)
    except Exception:
        wanted = 0
    return min(found, wanted) if wanted else found


def _spare_count() -> int:
    """Spares to keep: `spare_workers` per GPU (each GPU's checks start a worker every second or
    two, faster than one import of torch), at most one without a GPU."""
    try:
        per_device = get_settings().spare_workers
    except Exception:  # a bad setting must not stop checks; the CLI reports it
        return 0
    gpus = _gpu_count()
    return per_device * gpus if gpus else min(1, per_device)


def _top_up() -> None:
    want = _spare_count()
    with _spares_lock:
        while len(_spares) < want:
            _spares.append(_start(spare=True))


def start_spares_ahead() -> None:
    """Start the spare workers, and the zygote they are forked from, in the background now: for a
    caller about to start many checks on a GPU host (eval), whose first checks would otherwise wait
    for the zygote's imports (13 s on a busy 16-core host) after its own preparations."""
    if _gpu_count():  # without a GPU a spare importing torch would skew the CPU path's timing
        threading.Thread(target=_top_up, name="stitch-spares-ahead", daemon=True).start()


def _take_worker() -> tuple[_Started, bool]:
    """A started worker: a live spare if there is one, else a new one. With a GPU the spares are
    topped up at once (the next stage's worker warms up meanwhile); without one, to one spare and
    after the stage, since a spare importing torch would skew the host-clock timing of the CPU path."""
    with _spares_lock:
        taken = None
        while _spares and taken is None:
            w = _spares.pop(0)
            if w.proc.poll() is None:
                taken = w
            else:
                w.discard()
    if _gpu_count():
        _top_up()
    return (taken, True) if taken else (_start(), False)


def drop_spares() -> None:
    """Stop the idle spare workers (at exit, and when the setting changes)."""
    with _spares_lock:
        while _spares:
            _spares.pop().discard()


atexit.register(drop_spares)
atexit.register(drop_zygote)


@contextlib.contextmanager
def card_to_itself() -> Iterator[None]:
    """Around a stage judged again with the card to itself: the idle spares (and their rooms' CUDA
    contexts) are stopped, and none makes a context ahead meanwhile (devices.whole_card_run). Start
    its worker with `spare=False`."""
    from stitch_mcp.devices import whole_card_run

    with whole_card_run():
        drop_spares()
        yield


def run_worker(stage: str, spec: dict[str, Any], *, workdir: Path, timeout_s: float,
               on_event: Callable[[dict[str, Any]], None] | None = None,
               register_kill: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
               env: dict[str, str] | None = None, flood_bytes: int = FLOOD_BYTES, spare: bool = True,
               until_result: bool = False) -> WorkerResult:
    """Run one stage in a fresh worker process and classify how it ended.

    `register_kill(fn)` (e.g. Progress.on_cancel) is given a function that kills the worker; it
    returns an unregister function. Events the worker sends are passed to `on_event` as they come.
    The stage's result is validated as its model (stitch_mcp.stage_results) on receipt.
    `spare`: take a spare worker if one is ready (False: start one, with no rooms, leaving the
    spares to the run stages that wait on them). `until_result`: return once the result has come;
    the worker's exit (its CUDA context's teardown; the run stage's rooms ending, with its device
    lease and GPU memory share held until they have) and the clean-up after it go on in the
    background (`settle` waits for them; the result's `exited` is set once done). Nothing that
    follows the result changes it.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()  # CLOCK_MONOTONIC is the host's: the worker reads its start against it
    (workdir / "spec.json").write_text(json.dumps({"stage": stage, **spec, "ordered_at": t0}), encoding="utf-8")
    res = WorkerResult(stage="start")
    started, res.spare = _take_worker() if spare else (_start(rooms=False), False)
    proc = started.proc
    _give_order(started, workdir, env)
    kill = _Killer(proc)
    capture = _Capture(proc.stdout, flood_bytes, lambda: kill("flood"))
    unregister = register_kill(lambda: kill("cancelled")) if register_kill else None
    reported = threading.Event()
    reader = threading.Thread(target=_read_events, args=(started.events_fd, res, on_event, stage, reported),
                              daemon=True)
    reader.start()
    finished = _wait(proc, timeout_s, kill, res, reported if until_result else None)
    if finished:
        _clean_up(started, unregister)
        res.exited.set()
        reader.join(timeout=5)
        capture.thread.join(timeout=5)
    else:
        _finish_later(started, unregister, timeout_s, res.exited)
    res.seconds = time.monotonic() - t0
    res.returncode = proc.returncode
    res.output = capture.text()
    res.output_bytes = capture.total
    _classify(res, kill.why, proc.returncode, timeout_s, flood_bytes)
    return res


def _give_order(started: _Started, workdir: Path, env: dict[str, str] | None) -> None:
    """Send a started worker its stage over stdin: its spec, working directory and environment."""
    order = {"spec": str(workdir / "spec.json"), "cwd": str(workdir),
             "env": worker_env({**(env or {}), "STITCH_EVENT_FD": started.fd_env["STITCH_EVENT_FD"],
                                "STITCH_WORKER_TOKEN": started.token})}
    proc = started.proc
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(order).encode() + b"\n")
        proc.stdin.close()
    except OSError:  # it died before its order: _classify says how it ended
        pass


class _Killer:
    """Kills a worker's process tree, remembering the first reason given (timeout, flood, cancelled)."""

    def __init__(self, proc: WorkerProcess):
        self.proc = proc
        self.why = ""
        self._lock = threading.Lock()

    def __call__(self, why: str) -> None:
        with self._lock:
            if not self.why:
                self.why = why
        kill_tree(self.proc)


def _event_lines(fd: int) -> Iterator[bytes]:
    """The lines a worker writes on its event pipe, until it closes."""
    buf = b""
    with os.fdopen(fd, "rb", buffering=0) as fh:
        while True:
            try:
                chunk = fh.read(65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line


def _read_events(fd: int, res: WorkerResult, on_event: Callable[[dict[str, Any]], None] | None,
                 stage_name: str, reported: threading.Event) -> None:
    """Record the worker's events in `res` and pass each to `on_event` (the reader thread's body);
    `reported` is set once the result is in."""
    for line in _event_lines(fd):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        _record_event(ev, res, stage_name)
        if ev.get("event") == "result":
            reported.set()
        if on_event:
            try:
                on_event(ev)
            except Exception:
                log.exception("event callback failed")


def _record_event(ev: dict[str, Any], res: WorkerResult, stage_name: str) -> None:
    """The result (validated again here, as `stage_name`'s model: stitch_mcp.stage_results), a
    restart of a spare (no longer counted as one), or an event kept in order."""
    if ev.get("event") == "result":
        if res.result is None:  # one result per stage: run_worker may already have returned with it
            res.result = read_stage_result(stage_name, ev.get("data") or {})
    elif ev.get("event") == "spare_restarted":
        res.spare = False
    else:
        res.events.append(ev)
        if ev.get("event") == "stage":
            res.stage = str(ev.get("name", ""))


# Stages in which the worker only waits for others' checks to finish: they do not count against its
# time limit (with twelve checks at once a wait for the device passed 120 s), up to MAX_WAIT_S.
WAITING_STAGES = {"waiting for the device", "waiting for GPU memory", WAITING_FOR_CANDIDATES, COMPILING_BASELINE}
MAX_WAIT_S = 3600.0


def _wait(proc: WorkerProcess, timeout_s: float, kill: _Killer, res: WorkerResult,
          reported: threading.Event | None = None) -> bool:
    """Wait for the worker to exit (True), or for its result where `reported` is given (False);
    past `timeout_s` (not counting its WAITING_STAGES), kill it and wait a grace period more."""
    start = last = time.monotonic()
    waited = 0.0
    while True:
        try:
            if reported is not None and reported.wait(timeout=0.25) and res.result is not None:
                return proc.poll() is not None
            proc.wait(timeout=0.25 if reported is None else 0)
            return True
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if res.stage in WAITING_STAGES and waited < MAX_WAIT_S:
                waited += now - last
            last = now
            if now - start - waited > timeout_s:
                break
    kill("timeout")
    try:
        # A process killed while a kernel spins can sit in the driver until its context is torn
        # down; don't let that hold this thread (and the device lease) forever.
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        log.error("worker %d still alive %d s after SIGKILL (stuck in the GPU driver?)", proc.pid, KILL_GRACE_S)
    return True


_finishing: set[threading.Thread] = set()
_finishing_lock = threading.Lock()


def _finish_later(started: _Started, unregister: Callable[[], None] | None, timeout_s: float,
                  exited: threading.Event) -> None:
    """After a result came: let the worker exit (its CUDA context's teardown takes 0.1-0.3 s on an
    H100 host), kill it past `timeout_s`, then clean up after it, in a thread `settle` waits for;
    `exited` is set at the end."""
    def finish() -> None:
        try:
            started.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.error("worker %d did not exit %.0f s after its result: killing it", started.proc.pid, timeout_s)
        finally:
            _clean_up(started, unregister)
            exited.set()
            with _finishing_lock:
                _finishing.discard(threading.current_thread())

    thread = threading.Thread(target=finish, name=f"worker-{started.proc.pid}-exit", daemon=True)
    with _finishing_lock:
        _finishing.add(thread)
    thread.start()


def settle(timeout_s: float = 60.0) -> None:
    """Wait for the workers that reported and are still exiting (run_worker's `until_result`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with _finishing_lock:
            threads = list(_finishing)
        if not threads or time.monotonic() > deadline:
            return
        threads[0].join(timeout=max(0.0, deadline - time.monotonic()))


atexit.register(settle)


def _clean_up(started: _Started, unregister: Callable[[], None] | None) -> None:
    """After a stage, however it ended: kill what is left of the worker, then start the next spare."""
    kill_tree(started.proc)  # leftovers in the group (compilers, candidate's children)
    kill_marked(started.token)  # and those that left the group, or were orphaned when the worker exited
    os.close(started.lifeline_fd)
    if unregister:
        unregister()
    _top_up()


def _classify(res: WorkerResult, why: str, returncode: int | None, timeout_s: float, flood_bytes: int) -> None:
    """Set `res`'s status, kind and message: killed by us (and why), a result it reported, a
    signal, or an exit without a result."""
    if why == "timeout":
        res.status, res.kind = "timeout", "timeout"
        res.message = (f"timed out after {timeout_s:.0f} s during stage '{res.stage}' "
                       "(a hung kernel, an infinite loop, a deadlock or a very slow build)")
        if returncode is None:
            res.message += f"; the worker did not exit within {KILL_GRACE_S} s of SIGKILL (stuck in the driver)"
    elif why == "flood":
        res.status, res.kind = "flood", "output_flood"
        res.message = (f"the candidate flooded its output (over {flood_bytes // (1024 * 1024)} MB) during "
                       f"stage '{res.stage}'; remove debug printing (printf in kernels)")
    elif why == "cancelled":
        res.status, res.kind, res.message = "cancelled", "cancelled", "cancelled by the caller"
    elif res.result is not None:
        _classify_reported(res)
    elif returncode is not None and returncode < 0:
        _classify_signal(res, -returncode)
    else:
        _classify_exit(res, returncode)


def _classify_reported(res: WorkerResult) -> None:
    """The worker reported a result: ok, or the error it names."""
    if isinstance(res.result, StageResult):
        error = res.result.error
        res.status = "error" if error else "ok"
        res.kind, res.message = (error.kind, error.message) if error else ("", "")
        return
    # the selftest stage's plain dict
    res.status = "ok" if not res.result.get("error") else "error"
    err = res.result.get("error") or {}
    res.kind = err.get("kind", "") if isinstance(err, dict) else ""
    res.message = err.get("message", "") if isinstance(err, dict) else str(err)


def _classify_signal(res: WorkerResult, signum: int) -> None:
    """A signal killed the worker; an abort or a kill is named better by what its output says."""
    res.status = "crash"
    res.kind, res.message = describe_signal(signum)
    res.message += f" during stage '{res.stage}'"
    found = classify_error_text(res.output)
    if found and res.kind in ("abort", "killed"):
        res.kind, res.message = found[0], found[1] + f" during stage '{res.stage}'"


def _classify_exit(res: WorkerResult, returncode: int | None) -> None:
    """The worker exited without a result: named by its output if that names a crash."""
    res.status = "no_result"
    found = classify_error_text(res.output)
    if found:
        res.kind, res.message = found[0], found[1] + f" during stage '{res.stage}'"
    else:
        res.kind = "os_exit"
        res.message = (f"the worker exited with status {returncode} during stage '{res.stage}' without "
                       "reporting a result (os._exit or sys.exit called by the candidate, or a fatal error)")


# ------------------------------------------------------------------ child side

def apply_limits(limits: dict[str, Any]) -> list[str]:
    """Lower this process's resource limits; returns what was applied (best effort)."""
    applied = []

    def lower(res_id: int, value: int, label: str) -> None:
        try:
            soft, hard = resource.getrlimit(res_id)
            new = value if hard == resource.RLIM_INFINITY else min(value, hard)
            if soft != resource.RLIM_INFINITY and soft < new:
                return
            resource.setrlimit(res_id, (new, hard))
            applied.append(f"{label}={new}")
        except (ValueError, OSError):
            pass

    lower(resource.RLIMIT_CORE, 0, "core")
    if limits.get("nofile"):
        lower(resource.RLIMIT_NOFILE, int(limits["nofile"]), "nofile")
    if limits.get("nproc"):
        lower(resource.RLIMIT_NPROC, int(limits["nproc"]), "nproc")
    if limits.get("cpu_s"):
        lower(resource.RLIMIT_CPU, int(limits["cpu_s"]), "cpu")
    if limits.get("fsize"):
        lower(resource.RLIMIT_FSIZE, int(limits["fsize"]), "fsize")
    if limits.get("as_bytes"):
        lower(resource.RLIMIT_AS, int(limits["as_bytes"]), "as")
    if limits.get("deny_network") and hasattr(os, "unshare"):
        # A private network namespace has only a downed loopback: no network at all. Needs root (or
        # unprivileged user namespaces, which would remap our uid; not worth it for a best effort).
        try:
            os.unshare(os.CLONE_NEWNET)
            applied.append("netns")
        except (OSError, AttributeError):
            pass
    return applied


def _start_lifeline() -> None:
    """Fork a watchdog that kills this worker's process group when the server dies (its end of the
    lifeline pipe closes). A process, not a thread: a candidate spinning in C++ holds the GIL."""
    fd = int(os.environ.pop("STITCH_LIFELINE_FD", "-1"))
    if fd < 0:
        return
    pid = os.fork()
    if pid == 0:  # the watchdog: same process group as the worker
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.closerange(0, fd)
            os.closerange(fd + 1, 1 << 16)
            while os.read(fd, 4096):
                pass
        except BaseException:
            pass
        try:
            token = os.environ.get("STITCH_WORKER_TOKEN")
            if token:  # the worker and everything it started, wherever their group or session
                kill_marked(token)
            os.killpg(os.getpgrp(), signal.SIGKILL)
        finally:
            os._exit(0)
    os.close(fd)


def _cuda_driver_started() -> bool:
    """Whether cuInit has run in this process: before it, cuDeviceGetCount answers
    CUDA_ERROR_NOT_INITIALIZED (3). A driver library not even loaded has not started."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    count = ctypes.c_int()
    return lib.cuDeviceGetCount(ctypes.byref(count)) != 3


def _prestart_rooms() -> None:
    """A spare that will most likely judge a run starts its two rooms (candidate, reference) now,
    so their Python and torch start while it waits; a stage that needs none ends them."""
    parent = os.environ.get("STITCH_SPARE_ROOMS")
    if not parent:
        return
    try:
        from stitch_mcp.judge_room import prestart

        from stitch_mcp.cuda_tools import nvidia_devices

        prestart(Path(parent), gpu=bool(nvidia_devices()), count=2, subreaper=True,
                 cuda_ahead=os.environ.get("STITCH_ROOM_CUDA_AHEAD") or None)
    except Exception:  # no spare rooms: the judge starts its own
        log.exception("starting spare rooms failed")


def _warm_up() -> None:
    """What a run stage's first steps would otherwise pay for, done while the spare waits, beside
    the imports (zygote.import_worker_modules); it does not start the CUDA driver. NVML, which
    torch.cuda.is_available() asks (PYTORCH_NVML_BASED_CUDA_CHECK), loads and starts (0.3 s)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML here: nothing to warm
        pass


def _wait_for_order() -> Path | None:
    """Import what every stage needs, then wait for the parent's order: the spec's path, the
    working directory and the whole environment. None: the parent went away first."""
    _prestart_rooms()  # their Python and torch start beside ours
    try:
        import_worker_modules()  # at once in a fork of the zygote, which imported them already
        _warm_up()
    except Exception:  # the stage reports it again, where it can be classified
        pass
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    _set_name(WORKING_NAME)
    order = json.loads(line)
    devnull = os.open(os.devnull, os.O_RDONLY)  # the candidate reads nothing of ours
    os.dup2(devnull, 0)
    os.close(devnull)
    pinned_before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ.clear()
    os.environ.update(order["env"])
    get_settings.cache_clear()  # read at the zygote's or the spare's start: the order's settings now
    inductor = sys.modules.get("torch._inductor.config")  # imported by the warm-up: read its setting again
    if inductor is not None and os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "").isdigit():
        inductor.compile_threads = int(os.environ["TORCHINDUCTOR_COMPILE_THREADS"])
    os.chdir(order["cwd"])
    if _cuda_driver_started() and os.environ.get("CUDA_VISIBLE_DEVICES") != pinned_before:
        # The driver read CUDA_VISIBLE_DEVICES when it started, before this order: it would run on
        # whichever GPU it saw first. Become a fresh worker instead (same process and pipes).
        emit("spare_restarted", why="the CUDA driver started before the device was chosen")
        fd = int(os.environ["STITCH_EVENT_FD"])
        os.set_inheritable(fd, True)
        os.execve(sys.executable, [sys.executable, "-m", "stitch_mcp.worker", order["spec"]], dict(os.environ))
    if sys.path and sys.path[0] == str(PACKAGE_ROOT):  # `-m` put the start directory first: now it is this
        sys.path[0] = order["cwd"]
    return Path(order["spec"])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--zygote"]:  # the process workers are forked from (stitch_mcp.zygote)
        from stitch_mcp.zygote import serve

        _set_name(b"stitch-zygote")
        try:
            serve(int(argv[1]), lambda: main(["--spare"]))
        finally:
            os._exit(0)
    _start_lifeline()
    spec_path = _wait_for_order() if argv == ["--spare"] else Path(argv[0])
    if spec_path is None:
        os._exit(0)
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    applied = apply_limits(spec.get("limits") or {})
    emit("limits", applied=applied)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    name = spec["stage"]
    reported: list[Any] = []

    def report(result: Any) -> None:  # the run stage's result, sent before its rooms have ended
        _send_result(name, result)
        reported.append(True)

    try:
        if name == "run":
            from stitch_mcp.judge import run_stage

            result = run_stage(spec, report)
        elif name == "baseline":
            from stitch_mcp.correctness import baseline_stage

            result = baseline_stage(spec)
        elif name == "selftest":  # used by the tests to exercise crash classification
            result = _selftest(spec)
        else:
            raise ValueError(f"unknown stage {name!r}")
    except BaseException as exc:  # report, never raise: the parent reads the event pipe
        import traceback

        text = "".join(traceback.format_exception(exc))
        found = classify_error_text(f"{type(exc).__name__}: {exc}")
        kind, why = found if found else ("exception", "")
        result = {"error": {"kind": kind, "message": f"{type(exc).__name__}: {exc}"[:4000], "why": why,
                            "traceback": text[-6000:]}}
    if not reported:
        _send_result(name, result)
    if name == "selftest" and spec.get("exit_after_s"):  # a worker slow to exit after its result
        time.sleep(float(spec["exit_after_s"]))
    if "stitch_mcp.judge_room" in sys.modules:
        sys.modules["stitch_mcp.judge_room"].drop_spares()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no atexit handlers, no waiting on threads


def _send_result(stage_name: str, result: Any) -> None:
    try:
        emit("result", data=_checked_result(stage_name, result))
    except Exception:
        # The result did not serialise: report what we can.
        emit("result", data={"error": {"kind": "internal", "message": "result not serialisable"}})


def _checked_result(stage_name: str, result: Any) -> Any:
    """The stage's result as its model validates it (stitch_mcp.stage_results), ready to send: a
    result that does not validate is sent as an `internal` error naming what did not match."""
    checked = read_stage_result(stage_name, result)
    return checked.model_dump(exclude_unset=True) if isinstance(checked, StageResult) else checked


def _selftest(spec: dict[str, Any]) -> dict[str, Any]:
    """A stage for the worker's own tests: its result is a plain dict of whatever the test asks
    for, deliberately untyped (no model in stage_results.STAGE_RESULTS)."""
    action = spec.get("action")
    stage("selftest")
    if action == "ok":
        print("hello from the worker")
        return {"value": 42}
    if action == "segfault":
        import ctypes

        ctypes.string_at(0)
    if action == "exit":
        os._exit(3)
    if action == "hang":
        time.sleep(3600)
    if action == "flood":
        while True:
            sys.stdout.write("x" * 65536)
    if action == "oom":
        blocks = []
        while True:
            blocks.append(bytearray(256 * 1024 * 1024))
    if action == "raise":
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if action == "wait_then_hang":  # waiting for the device does not count against the time limit
        stage("waiting for the device")
        time.sleep(float(spec.get("wait_s", 0)))
        stage("selftest")
        time.sleep(float(spec.get("then_s", 0)))
        return {"waited": True}
    if action == "cuda_devices":  # which GPUs a stage sees: for the spare-worker GPU test
        import torch

        return {"uuids": [str(torch.cuda.get_device_properties(i).uuid) for i in range(torch.cuda.device_count())]}
    if action == "malloc_keeps_freed":  # MALLOC_TUNABLES applied: a freed 64 MB block stays for reuse
        def resident() -> int:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        blocks = [bytearray(64 << 20)]  # zero-filled: every page touched
        held = resident()
        blocks.clear()
        return {"kept": resident() > held - (32 << 20)}
    if action == "whoami":  # what a stage starts with: for the spare-worker tests
        import torch._inductor.config as inductor

        return {"cwd": os.getcwd(), "path0": sys.path[0], "stdin": sys.stdin.read(),
                "probe": os.environ.get("STITCH_PROBE"), "torch_imported": "torch" in sys.modules,
                "inductor_threads": inductor.compile_threads,
                "rooms_started": len(getattr(sys.modules.get("stitch_mcp.judge_room"), "_spares", [])),
                "open_files": [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                               if os.path.exists(f"/proc/self/fd/{fd}")]}
    return {}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
