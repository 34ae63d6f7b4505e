"""Long work that outlives one tool call.

MCP clients give up on a call after about 60 s. A long tool submits its work here, waits up to
`max_wait_s` while forwarding progress, and otherwise answers `status: "running"` with a job id;
`job_status` waits on the same job later. A retried call with the same arguments joins the job
already running instead of starting another; a cancelled call cancels its job.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid
import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from stitch_mcp.errors import NotFound, UserError

log = logging.getLogger(__name__)


class Cancelled(Exception):
    """Raised inside a job whose caller cancelled it."""


class Progress:
    """Handed to a job: report progress, check for cancellation, register cleanup on cancel."""

    def __init__(self) -> None:
        self.done: float = 0.0
        self.total: float | None = None
        self.message: str = ""
        self.version = 0
        self.messages: list[str] = []  # every step's message, for a client that reads them all
        self._cancel = threading.Event()
        self._on_cancel: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def update(self, done: float, total: float | None = None, message: str = "") -> None:
        with self._lock:
            self.done, self.total, self.message = done, total if total is not None else self.total, message
            self.version += 1
            if message and len(self.messages) < 1000:
                self.messages.append(message)
        self.announce()

    def announce(self) -> None:
        """Tell a person about the new progress (the log on stderr; the CLI prints it instead)."""
        log.info("progress %s/%s %s", self.done, self.total, self.message)

    def step(self, message: str) -> None:
        self.update(self.done + 1, self.total, message)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        if self._cancel.is_set():
            raise Cancelled("cancelled by the caller")

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Run fn (e.g. kill a worker) if the job is cancelled; returns a function that unregisters it."""
        with self._lock:
            self._on_cancel.append(fn)
            if self._cancel.is_set():
                fn()

        def remove() -> None:
            with self._lock:
                if fn in self._on_cancel:
                    self._on_cancel.remove(fn)

        return remove

    def cancel(self) -> None:
        self._cancel.set()
        with self._lock:
            callbacks = list(self._on_cancel)
        for fn in callbacks:
            try:
                fn()
            except Exception:  # cleanup must not stop other cleanups
                log.exception("cancel callback failed")


@dataclass
class Job:
    job_id: str
    tool: str
    key: str
    progress: Progress = field(default_factory=Progress)
    status: str = "running"  # running | done | failed | cancelled
    result: BaseModel | None = None
    error: str | None = None
    user_error: bool = False
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    finished: threading.Event = field(default_factory=threading.Event)


class JobManager:
    """Runs jobs in threads; the heavy part of each job runs in its own worker process."""

    keep_s = 3600.0
    # A call repeated this soon after its job finished is taken as a client's retry and gets that
    # result; later, the same arguments start new work (e.g. to re-time a candidate).
    rejoin_s = 120.0

    def __init__(self, on_start: Callable[[Job], None] | None = None,
                 on_finish: Callable[[Job], None] | None = None) -> None:
        self._jobs: dict[str, Job] = {}
        self._by_key: dict[str, str] = {}
        self._lock = threading.Lock()
        self._on_start, self._on_finish = on_start, on_finish

    def submit(self, tool: str, key: str, fn: Callable[..., BaseModel]) -> Job:
        """Start fn(progress=...) in a thread, or return the job already running for this key."""
        with self._lock:
            self._expire()
            existing = self._jobs.get(self._by_key.get(key, ""))
            if existing and (existing.status == "running" or (
                    existing.status == "done" and time.time() - (existing.finished_at or 0) < self.rejoin_s)):
                return existing
            job = Job(job_id=f"j-{uuid.uuid4().hex[:12]}", tool=tool, key=key)
            self._jobs[job.job_id] = job
            self._by_key[key] = job.job_id
        if self._on_start:
            self._on_start(job)
        # The job sees the caller's context (e.g. the client's roots for reading paths).
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(self._run, job, fn), name=f"job-{tool}-{job.job_id}",
                         daemon=True).start()
        return job

    def _run(self, job: Job, fn: Callable[[Progress], BaseModel]) -> None:
        try:
            job.result = fn(progress=job.progress)
            job.status = "done"
        except Cancelled as exc:
            job.status, job.error = "cancelled", str(exc)
        except UserError as exc:
            job.status, job.error, job.user_error = "failed", str(exc), True
        except Exception as exc:
            log.error("job %s (%s) failed:\n%s", job.job_id, job.tool, traceback.format_exc())
            job.status, job.error = "failed", f"internal error in {job.tool}: {type(exc).__name__}: {exc}"
        finally:
            job.finished_at = time.time()
            if job.progress.cancelled and job.status == "done":
                job.status = "cancelled"
            job.finished.set()
            if self._on_finish:
                try:
                    self._on_finish(job)
                except Exception:
                    log.exception("on_finish failed")

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFound(f"job_id: unknown job {job_id!r} (jobs are kept for an hour)")
        return job

    def cancel(self, job_id: str) -> None:
        job = self.get(job_id)
        if job.status == "running":
            job.progress.cancel()

    def wait(self, job: Job, timeout: float) -> bool:
        return job.finished.wait(timeout)

    def _expire(self) -> None:
        now = time.time()
        for jid, job in list(self._jobs.items()):
            if job.finished_at and now - job.finished_at > self.keep_s:
                del self._jobs[jid]
                if self._by_key.get(job.key) == jid:
                    del self._by_key[job.key]


def job_key(tool: str, **args: Any) -> str:
    """Same tool and arguments -> same key, so a retried call joins the running job."""
    import hashlib
    import json

    blob = json.dumps({"tool": tool, **args}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def read_programs(args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job's key arguments (each program replaced by its content hash) and its call arguments
    (each program as read here), validated on the way.

    Reading the programs here answers a bad path or source at once, naming the field, and keys
    the job on what the files hold: an edited file is new work, not a retry of the old call. The
    job then works on what was read, never reads the file again: what it checks is what its key says.
    """
    from stitch_mcp.sources import check_reference, load_program
    from stitch_mcp.store import content_id

    keyed, call = dict(args), dict(args)
    for name in ("reference", "candidate"):
        if keyed.get(name):
            program = load_program(keyed[name], name)
            if name == "reference":
                check_reference(program)
            keyed[name], call[name] = content_id("s", program.source), program
    return keyed, call


class JobRunner:
    """Runs each long tool's work as a job recorded in the workspace, so a restart can report the jobs
    it interrupted. The MCP layer submits, waits up to max_wait_s, and answers 'running' otherwise."""

    def __init__(self) -> None:
        from stitch_mcp.store import get_workspace

        ws = get_workspace()
        interrupted = ws.mark_interrupted()
        if interrupted:
            log.warning("%d job(s) were interrupted by the last shutdown (a client that exits after one call "
                        "stops the server with it: see the README on max_wait_s)", interrupted)
        self.jobs = JobManager(on_start=lambda j: ws.job_started(j.job_id, j.tool), on_finish=self._record_finish)

    @staticmethod
    def _record_finish(job: Job) -> None:
        from stitch_mcp.store import get_workspace

        result = job.result.model_dump_json() if job.result is not None else None
        get_workspace().job_finished(job.job_id, job.status, job.error, result)

    def submit(self, tool: str, args: dict[str, Any], fn: Callable[..., BaseModel]) -> Job:
        """Start fn(**args) as a job (or join the same work already running). Reads the programs to key
        the job, so it blocks on files: call it from a thread, not an event loop."""
        import functools

        keyed, call = read_programs(args)
        return self.jobs.submit(tool, job_key(tool, **keyed), functools.partial(fn, **call))

    @staticmethod
    async def wait(job: Job, max_wait_s: float,
                   on_progress: Callable[[Progress], Awaitable[None]] | None = None) -> bool:
        """Wait up to max_wait_s for the job, calling on_progress at each change; True when it finished."""
        import anyio

        seen = -1
        with anyio.move_on_after(max_wait_s):
            while not job.finished.is_set():
                if on_progress is not None and job.progress.version != seen:
                    seen = job.progress.version
                    await on_progress(job.progress)
                await anyio.to_thread.run_sync(job.finished.wait, 0.25, abandon_on_cancel=True)
        if on_progress is not None and job.progress.version != seen:  # the steps since the last look
            await on_progress(job.progress)
        return job.finished.is_set()
