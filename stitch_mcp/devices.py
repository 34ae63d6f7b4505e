"""GPUs of this host: discovery through NVML, and exclusive use of one device at a time.

A verification's run stage (correctness and timing) holds a lock on one device for its whole
run, so two timings never overlap on a GPU — also across several server processes on the host,
since the lock is a file lock. A GPU that someone else is using (memory or utilisation above a
threshold, from NVML, with a compute process that is not one of our workers) is passed over while
another is free, and reported when it is all we have.
Without a GPU the host's CPU is the device: CPU timings are serialised the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.config import get_settings

log = logging.getLogger(__name__)

BUSY_MEMORY_FRACTION = 0.10  # memory in use by others above this share of the card counts as busy
BUSY_UTILIZATION_PCT = 20


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index (what CUDA_VISIBLE_DEVICES takes when CUDA_DEVICE_ORDER=PCI_BUS_ID)
    uuid: str
    name: str
    memory_total: int = 0
    memory_used: int = 0
    utilization_pct: int = 0
    foreign_processes: int | None = None  # compute processes that are not stitch-mcp workers; None: unknown
    reserved_bytes: int = 0  # kept out of the memory shares: spare rooms' CUDA contexts (cuda_ahead_device)

    @property
    def busy(self) -> bool:
        if self.foreign_processes == 0:  # only our own workers (or one just gone): the lock orders those
            return False
        return (self.memory_total and self.memory_used / self.memory_total > BUSY_MEMORY_FRACTION) or \
            self.utilization_pct > BUSY_UTILIZATION_PCT


def _foreign_processes(pynvml, handle) -> int | None:
    """Compute processes on the GPU that are not stitch-mcp workers (whose environment carries
    STITCH_WORKER_TOKEN). A process we cannot inspect (another user's, another container's) counts."""
    import psutil

    try:
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return None
    foreign = 0
    for proc in procs:
        try:
            env = psutil.Process(proc.pid).environ()
            if "STITCH_WORKER_TOKEN" in env or env.get("STITCH_ROOM") == "1":  # a worker or a room of ours
                continue
        except psutil.Error:
            pass
        foreign += 1
    return foreign


def discover() -> list[Gpu]:
    """The GPUs this server may use (settings.gpus, else all), with their current load."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return []
    wanted = get_settings().gpu_indices or None
    gpus = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        if wanted is not None and i not in wanted:
            continue
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
        try:
            util = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
        except pynvml.NVMLError:
            util = 0
        name = pynvml.nvmlDeviceGetName(h)
        uuid = pynvml.nvmlDeviceGetUUID(h)
        gpus.append(Gpu(i, _nvml_text(uuid), _nvml_text(name), mem.total, mem.used, util,
                        _foreign_processes(pynvml, h)))
    return gpus


def _nvml_text(value: str | bytes) -> str:
    """A name or uuid from NVML: str from newer pynvml, bytes from older."""
    return value if isinstance(value, str) else value.decode()


CPU = Gpu(-1, "cpu", "host CPU")


def lock_dir() -> Path:
    """One folder per host and user, whatever each server's cache dir: every stitch-mcp process
    on this machine must see the same locks, and no candidate (sandbox.private_folder)."""
    from stitch_mcp.sandbox import private_folder

    return private_folder(Path(tempfile.gettempdir()) / f"stitch-mcp-locks-{os.getuid()}")


def _lock_path(gpu: Gpu) -> Path:
    return lock_dir() / f"device-{gpu.uuid}.lock"


@dataclass
class Lease:
    gpu: Gpu | None  # None: the host CPU
    waited_s: float
    note: str = ""
    acquired_at: float = 0.0

    @property
    def label(self) -> str:
        return f"GPU {self.gpu.index} ({self.gpu.name}, {self.gpu.uuid})" if self.gpu else "CPU"

    def worker_env(self) -> dict[str, str]:
        """Environment that pins a worker process to this GPU."""
        if self.gpu is None:
            return {}
        return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(self.gpu.index)}


def choose_device() -> Gpu | None:
    """The GPU a check will run on, chosen without holding it (the judge takes the lease only for
    its trials and timing, so imports and lazy builds overlap other checks): a free one if any, else
    the least busy. None without a GPU."""
    gpus = discover()
    if not gpus:
        return None
    ordered = sorted(gpus, key=lambda g: (g.busy, g.memory_used))
    chosen = ordered[0]
    for gpu in ordered:
        with open(_lock_path(gpu), "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            fcntl.flock(fh, fcntl.LOCK_UN)
            chosen = gpu
            break
    return dataclasses.replace(chosen, reserved_bytes=_spare_contexts_bytes(chosen))


# What one room's CUDA context holds on an H100 (0.5-0.6 GB), with some slack.
ROOM_CONTEXT_BYTES = 640 << 20
_whole_card_runs = 0  # checks judged again with the card to themselves, now (whole_card_run)


def cuda_ahead_device() -> str | None:
    """The GPU (CUDA_VISIBLE_DEVICES, in PCI bus order as pin_env gives it) on which spare rooms make
    their CUDA context before their check comes: only where every check runs on that one GPU
    (settings.cuda_ahead, spare workers, one GPU in use) and no check has the card to itself.
    None: they make it when they load. Decided by the server, which starts the spares."""
    try:
        settings = get_settings()
        if not (settings.cuda_ahead and settings.spare_workers) or _whole_card_runs:
            return None
        import pynvml

        pynvml.nvmlInit()
        indices = [i for i in range(pynvml.nvmlDeviceGetCount())
                   if not settings.gpu_indices or i in settings.gpu_indices]
    except Exception:  # a bad setting, NVML missing or failing: the rooms start CUDA when they load
        return None
    return str(indices[0]) if len(indices) == 1 else None


def spare_cuda_ahead_device() -> str | None:
    """cuda_ahead_device for a spare worker's rooms starting now: None where a check waits for that
    GPU's memory at this moment. Under that contention most checks wait for their share, and a check
    that waits swaps such rooms for ones without a context (judge.prepare._rooms_without_cuda): two
    imports of torch and a CUDA start thrown away, on a host whose CPU the checks' builds and rooms
    keep busy (eval on an H100: 82% of 16 cores). The memory shares' reserve for the spares' contexts
    stays as cuda_ahead_device says (every judge must divide the card the same way)."""
    index = cuda_ahead_device()
    if index is None:
        return None
    try:
        import pynvml

        uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(int(index)))
        waited_for = memory_waited_for(Gpu(int(index), _nvml_text(uuid), ""))
    except Exception:  # not known: as before this test
        return index
    return None if waited_for else index


def _spare_contexts_bytes(gpu: Gpu) -> int:
    """What the spare workers' rooms hold on `gpu` where they make their CUDA context ahead: two
    rooms per spare worker (worker._spare_count)."""
    return 2 * get_settings().spare_workers * ROOM_CONTEXT_BYTES if cuda_ahead_device() == str(gpu.index) else 0


@contextlib.contextmanager
def whole_card_run() -> Iterator[None]:
    """While a check has the card to itself, no spare room makes a CUDA context ahead."""
    global _whole_card_runs
    _whole_card_runs += 1
    try:
        yield
    finally:
        _whole_card_runs -= 1


def pin_env(gpu: Gpu | None) -> dict[str, str]:
    """Environment that pins a worker process to `gpu`."""
    return Lease(gpu, 0.0).worker_env()


@contextlib.contextmanager
def acquire_device(timeout_s: float = 3600.0, poll_s: float = 0.05, gpus: list[Gpu] | None = None,
                   check_cancel=None) -> Iterator[Lease]:
    """Hold one device exclusively: a free, idle GPU if any, else wait for the first to free up;
    the host CPU when there is no GPU. `check_cancel()` may raise to stop waiting."""
    gpus = discover() if gpus is None else gpus
    cpu = not gpus
    if cpu:
        gpus = [CPU]
    start = time.monotonic()
    idle_first = sorted(gpus, key=lambda g: (g.busy, g.memory_used))
    # one open file per call: flock excludes other calls of this process as well as other processes
    handles = {g.uuid: open(_lock_path(g), "a+") for g in idle_first}
    held: Gpu | None = None
    try:
        while held is None:
            for gpu in idle_first:
                try:
                    fcntl.flock(handles[gpu.uuid], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                held = gpu
                break
            if held is None:
                if time.monotonic() - start > timeout_s:
                    raise TimeoutError(f"no GPU came free in {timeout_s:.0f} s")
                if check_cancel:
                    check_cancel()
                time.sleep(poll_s)
        note = f"GPU {held.index} is in use by other work ({held.memory_used >> 20} MiB, " \
               f"{held.utilization_pct}% busy): timings may be noisy" if held.busy else ""
        if note:
            log.warning(note)
        yield Lease(None if cpu else held, time.monotonic() - start, note, time.time())
    finally:
        for f in handles.values():
            with contextlib.suppress(OSError):
                fcntl.flock(f, fcntl.LOCK_UN)
            f.close()



# A GPU's memory in equal shares, one lock file each. A check holds the shares its estimate needs
# from its first allocation on the device to its end (stitch_mcp.gpu_memory), so checks that import,
# build and warm up outside the device lease cannot run the card out of memory between them. Order:
# memory first, then the device lease, never the other way round (no one waits for memory while
# holding the device).
MEMORY_SHARES = 32


def _share_path(gpu: Gpu, i: int | str) -> Path:
    return lock_dir() / f"memory-{gpu.uuid}-{i}.lock"


# How long the head of the memory queue lets later requests that fit in the free shares at once pass
# it. A level-1 check needs 21-28 of 32 shares: while it waited for another to end, its partial
# hold kept smaller checks off the rest of the card (an H100, 2026-11-26: 16 s of memory wait per
# check). After this long it keeps every share that comes free until it has enough: nothing
# starves it.
LET_PASS_S = 20.0


@contextlib.contextmanager
def reserve_memory(gpu: Gpu, shares: int, timeout_s: float = 3600.0, poll_s: float = 0.05,
                   check_cancel=None, let_pass_s: float = LET_PASS_S, on_wait=None) -> Iterator[float]:
    """Hold `shares` of MEMORY_SHARES shares of `gpu`'s memory; yields the seconds waited. One
    process at a time is the head of the queue (a queue lock). For its first `let_pass_s` the head
    takes its shares only all at once, and later requests that find enough free shares take them
    and pass it; then it keeps what comes free until it has enough, and no one passes it.
    `on_wait()` is called once, before the first wait, where the shares are not free at once."""
    shares = max(1, min(shares, MEMORY_SHARES))
    handles = [open(_share_path(gpu, i), "a+") for i in range(MEMORY_SHARES)]
    queue = open(_share_path(gpu, "queue"), "a+")
    held: list = []
    start = time.monotonic()
    waits = []

    def wait_or_give_up() -> None:
        if on_wait is not None and not waits:
            waits.append(on_wait())
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{shares} of {MEMORY_SHARES} shares of GPU {gpu.index}'s memory did not come free "
                               f"in {timeout_s:.0f} s")
        if check_cancel:
            check_cancel()
        time.sleep(poll_s)

    try:
        passed = False
        while not _try_lock(queue):
            if _head_lets_pass(gpu, let_pass_s) and _take_at_once(handles, shares, held):
                passed = True
                break
            wait_or_give_up()
        if not passed:
            _collect_as_head(gpu, queue, handles, shares, held, let_pass_s, wait_or_give_up)
        yield time.monotonic() - start
    finally:
        for f in [*handles, queue]:
            with contextlib.suppress(OSError):
                fcntl.flock(f, fcntl.LOCK_UN)
            f.close()


def memory_waited_for(gpu: Gpu) -> bool:
    """Whether a check is waiting for shares of `gpu`'s memory now: the head of the queue holds its
    lock while it waits (a request that finds its shares free holds it for an instant only)."""
    with open(_share_path(gpu, "queue"), "a+") as queue:
        if not _try_lock(queue):
            return True
        fcntl.flock(queue, fcntl.LOCK_UN)
    return False


def _collect_as_head(gpu: Gpu, queue, handles: list, shares: int, held: list, let_pass_s: float,
                     wait_or_give_up) -> None:
    """The head of the queue: all at once while it lets others pass, then share by share; the queue
    is the next one's once it has enough."""
    head_since = time.monotonic()
    _share_path(gpu, "head").write_text(f"{time.time():.3f}\n")  # when it became the head: _head_lets_pass
    while True:
        if time.monotonic() - head_since < let_pass_s:
            _take_at_once(handles, shares, held)
        else:
            for h in handles:
                if len(held) < shares and h not in held and _try_lock(h):
                    held.append(h)
        if len(held) == shares:
            break
        wait_or_give_up()
    fcntl.flock(queue, fcntl.LOCK_UN)


def _take_at_once(handles: list, shares: int, held: list) -> bool:
    """Take `shares` free shares into `held`, or none."""
    taken = []
    for h in handles:
        if len(taken) == shares:
            break
        if _try_lock(h):
            taken.append(h)
    if len(taken) == shares:
        held.extend(taken)
        return True
    for h in taken:
        fcntl.flock(h, fcntl.LOCK_UN)
    return False


def _head_lets_pass(gpu: Gpu, let_pass_s: float) -> bool:
    """Whether the head of the queue became the head less than `let_pass_s` ago."""
    try:
        since = float(_share_path(gpu, "head").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return time.time() - since < let_pass_s


def _try_lock(fh) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
