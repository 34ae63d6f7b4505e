"""Building a candidate: in a sandboxed room, never in a process of ours.

Building means importing the candidate with the build cache installed (its `load_inline` calls
compile), so the candidate's module-level code and its compiler flags run: that happens in a
candidate room (stitch_mcp.room), which sees its own folder, the candidate's cache scope read-only
and the Python it runs on. What the room built stays in its folder until the trusted side copies
the finished objects into the candidate's cache scope (check.candidate_scope), owned by us and
read-only from then on, and writes the manifest itself.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
import time
from pathlib import Path
from stitch_mcp.build.cache import write_manifest
from stitch_mcp.correctness import StageError
from stitch_mcp.outcomes import WorkerResult
from stitch_mcp.stage_results import BuildStageResult, BuiltExtension, StageFailure, valid_records


log = logging.getLogger(__name__)

# The rehearsal's limit for time no compiler runs: it calls the model on the meta device, in
# moments; a candidate that loops there is left to the run stage's limit and verdict.
REHEARSAL_IDLE_S = 20.0
BUILD_MEMORY = 1.5 * 2 ** 30  # what one build (cpp_extension: nvcc and g++ on a few units) may take
_slots_lock = threading.Lock()
_slots: threading.BoundedSemaphore | None = None


def _build_slots() -> threading.BoundedSemaphore:
    """How many builds run at once: one per two cores and per 1.5 GB of free memory (six parallel
    C++ builds took 4.4 GB on a 2-core machine), at least one. The others wait their turn."""
    global _slots
    with _slots_lock:
        if _slots is None:
            import psutil

            by_memory = int(psutil.virtual_memory().available // BUILD_MEMORY)
            _slots = threading.BoundedSemaphore(max(1, min((os.cpu_count() or 1) // 2, by_memory)))
        return _slots


def build_in_room(candidate_source: str, scope: Path, settings, *, gpu: bool, register_kill=None,
                  progress=None, reference_source: str | None = None) -> WorkerResult:
    """The build stage's outcome in the shape the report code reads (a WorkerResult whose result
    is a BuildStageResult). With `reference_source`, what the candidate builds on first use is
    built too (see _rehearse)."""
    slots = _build_slots()
    if not slots.acquire(blocking=False):
        if progress is not None:
            progress.update(0, 3, "waiting for a build slot (builds are queued by cores and memory)")
        slots.acquire()
    try:
        return _build(candidate_source, scope, settings, gpu=gpu, register_kill=register_kill,
                      reference_source=reference_source)
    finally:
        slots.release()


def _build(candidate_source: str, scope: Path, settings, *, gpu: bool, register_kill=None,
           reference_source: str | None = None) -> WorkerResult:
    from stitch_mcp.judge_room import RoomClient, RoomGone, prestart

    parent = Path(settings.cache_dir).expanduser() / "work"
    spec = {"build_root": str(scope), "room_parent": str(parent), "room_timeout_s": settings.build_timeout_s,
            "gpu": gpu}
    t0 = time.monotonic()
    res = WorkerResult(stage="build")
    room = RoomClient.start(spec, candidate_source, subreaper=False)
    if settings.spare_workers:
        prestart(parent, gpu, 1)  # the next build's room imports torch while this one builds
    unregister = register_kill(room.close) if register_kill else None
    try:
        loaded = room.build(settings.build_timeout_s)
        if reference_source is not None:
            loaded = _rehearse(room, reference_source, loaded, settings.build_timeout_s - (time.monotonic() - t0))
        room.kill()  # nothing of the candidate runs while its folder is copied
        published = set(publish_build(room.workdir / "build", scope))
        records = valid_records(BuiltExtension, loaded.extensions)
        res.result = BuildStageResult(extensions=records)
        # the manifest names what was built: a record whose build failed in the rehearsal (the run
        # stage builds and judges it) would make every later check of this source build again
        write_manifest(scope, candidate_source, {"extensions": [
            r.model_dump() for r in records if r.key in published or (scope / "objects" / r.key / "done").is_file()],
            "needs_gpu": ""})
    except StageError as exc:
        res.result = _failed_build(exc, room, scope, candidate_source)
        res.status = "ok" if res.result.needs_gpu is not None else "error"
        res.kind = exc.kind
        res.message = exc.message
    except RoomGone as exc:
        res.status = "timeout" if exc.kind == "timeout" else "crash"
        res.kind, res.message = exc.kind, exc.message
    finally:
        if unregister:
            unregister()
        res.output = room.capture.text()
        room.close()
    res.seconds = time.monotonic() - t0
    return res


def _rehearse(room, reference_source: str, loaded, deadline_s: float):
    """The candidate's model built and called once on the meta device (door.Rehearse): a
    `load_inline` in `__init__` or in the first `forward` builds here, on the CPU, rather than in
    the run stage while the check holds its share of the GPU's memory (the run stage's room is
    handed what was built). Its failures are not the build's but one: CUDA code on a host without
    a GPU (needs_gpu, as at import); the run stage calls the model for real, and a room that died
    or overran its time here is only noted (the build stands)."""
    from stitch_mcp.judge_room import RoomGone

    try:
        return room.rehearse(reference_source, max(deadline_s, 1.0), REHEARSAL_IDLE_S)
    except (StageError, RoomGone) as exc:
        if isinstance(exc, StageError) and exc.kind == "needs_gpu":  # compiled as far as this host allows
            raise
        log.info("rehearsing the first call in the build room: %s", exc)
        return loaded


def _failed_build(exc: StageError, room, scope: Path, candidate_source: str) -> BuildStageResult:
    """A build the room reported failed (its records already kept valid: judge_room._candidate_failure),
    or one that needs a GPU to go further."""
    extra = exc.extra
    extensions, diagnostics = extra.get("extensions") or [], extra.get("diagnostics") or []
    if exc.kind == "needs_gpu":  # compiled as far as this host allows: keep that for next time
        room.kill()
        publish_build(room.workdir / "build", scope)
        write_manifest(scope, candidate_source, {"extensions": extensions, "needs_gpu": exc.message,
                                                 "diagnostics": diagnostics})
        return BuildStageResult(needs_gpu=exc.message, extensions=extensions, diagnostics=diagnostics)
    log = extra.get("log") or ""
    return BuildStageResult(error=StageFailure(kind=exc.kind, message=exc.message, line=extra.get("line"),
                                               diagnostics=diagnostics, log=log),
                            extensions=extensions, diagnostics=diagnostics, log_tail=log[-4000:])


def publish_build(built: Path, scope: Path) -> list[str]:
    """Copy each finished object folder (`objects/<key>/` with its `done` or `compiled` marker)
    the room made into the scope, ours and read-only; returns the keys published. The room may
    still be running and swapping its files for links while we copy: every entry is opened once,
    without following links, relative to its opened folder, and copied from what was opened."""
    published: list[str] = []
    source = _open_dir(built.parent, built.name, "objects")  # built.parent: the room's folder, made by us
    if source is None:
        return published
    target_root = scope / "objects"
    target_root.mkdir(parents=True, exist_ok=True)
    try:
        for entry in os.scandir(source):
            if (target_root / entry.name).exists():
                continue
            folder = _open_entry(entry.name, source)
            if folder is None or not stat.S_ISDIR(os.fstat(folder).st_mode):
                _close(folder)
                continue
            try:
                tmp = target_root / f".{entry.name}.{os.getpid()}"
                _copy_regular_tree(folder, tmp)
                if not ((tmp / "done").is_file() or (tmp / "compiled").is_file()):
                    shutil.rmtree(tmp, ignore_errors=True)
                    continue
                _read_only(tmp)
                try:
                    os.replace(tmp, target_root / entry.name)
                    published.append(entry.name)
                except OSError:  # published meanwhile by another check of the same source
                    shutil.rmtree(tmp, ignore_errors=True)
            finally:
                os.close(folder)
    finally:
        os.close(source)
    return published


def _open_dir(root: Path, *names: str) -> int | None:
    """`root/names...` opened as a folder, no link followed below `root` (ours); None if it is not one."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY) if root.is_dir() else None
    for name in names:
        if fd is None:
            return None
        inner = _open_entry(name, fd)
        os.close(fd)
        fd = inner if inner is not None and stat.S_ISDIR(os.fstat(inner).st_mode) else _close(inner)
    return fd


def _open_entry(name: str, dir_fd: int) -> int | None:
    """An entry of an opened folder, opened without following a link (and without waiting on a FIFO)."""
    try:
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:  # a link (ELOOP), a socket, or gone
        return None


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def _copy_regular_tree(dir_fd: int, target: Path, depth: int = 0) -> None:
    """Regular files and folders of an opened folder into `target` (created here): links, FIFOs
    and devices are left out, and nothing is followed."""
    target.mkdir()
    for entry in os.scandir(dir_fd):
        fd = _open_entry(entry.name, dir_fd)
        if fd is None:
            continue
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode) and depth < 8:
                _copy_regular_tree(fd, target / entry.name, depth + 1)
            elif stat.S_ISREG(mode):
                os.set_blocking(fd, True)
                with open(target / entry.name, "xb") as out, os.fdopen(os.dup(fd), "rb") as src:
                    shutil.copyfileobj(src, out)
        finally:
            os.close(fd)


def _read_only(root: Path) -> None:
    uid, gid = os.getuid(), os.getgid()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.geteuid() == 0:
                os.lchown(path, uid, gid)
            os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH | (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
                                                                        if name.endswith(".so") else 0))
        if os.geteuid() == 0:
            os.lchown(dirpath, uid, gid)
        os.chmod(dirpath, 0o555)
