"""How a child process ended, as its parent sees it: the signal that killed it, its output (head
and tail kept, a flood cut off), and what it reported (`WorkerResult`); and the malloc settings
every worker and room starts with. Shared by the worker's parent side and the judge's rooms, which
must not import each other.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stitch_mcp.stage_results import StageResult

# glibc's malloc returns a large block to the system when it is freed (mmap'd above a threshold it
# moves as it goes), so each call's fresh output of a CPU tensor page-faults in again, or not,
# depending on what came before: torch.relu over 4M floats took 0.5 or 3.3 ms by turns on a
# 2-core host. Fixed thresholds keep a room's and a judge's freed blocks for reuse; both rooms
# (candidate and eager) run under the same ones. A GLIBC_TUNABLES of the user's own stands. Only
# where timing is on the host's clock (no GPU): the GPU path times on CUDA events and is left as it
# was measured on an H100.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"


def malloc_env() -> dict[str, str]:
    """The GLIBC_TUNABLES a worker or room starts with (see MALLOC_TUNABLES); {} to leave it be."""
    import os

    from stitch_mcp.cuda_tools import nvidia_devices

    if "GLIBC_TUNABLES" in os.environ:
        return {"GLIBC_TUNABLES": os.environ["GLIBC_TUNABLES"]}
    return {} if nvidia_devices() else {"GLIBC_TUNABLES": MALLOC_TUNABLES}


HEAD_BYTES = 4_000
TAIL_BYTES = 12_000


def describe_signal(signum: int) -> tuple[str, str]:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    if signum == signal.SIGSEGV:
        return "segfault", "the worker crashed with a segmentation fault (SIGSEGV): a host-side invalid memory access"
    if signum == signal.SIGBUS:
        return "segfault", "the worker crashed with a bus error (SIGBUS)"
    if signum == signal.SIGABRT:
        return "abort", "the worker aborted (SIGABRT): a failed assertion or an uncaught C++ exception"
    if signum == signal.SIGFPE:
        return "signal", "the worker crashed with a floating-point exception (SIGFPE): integer division by zero?"
    if signum == signal.SIGXCPU:
        return "cpu_time_limit", "the worker used up its CPU-time limit"
    if signum == signal.SIGXFSZ:
        return "file_size_limit", "the worker wrote a file over its size limit"
    if signum == signal.SIGKILL:
        return "killed", "the worker was killed (SIGKILL): most likely the host ran out of memory (OOM killer)"
    return "signal", f"the worker died from {name}"


@dataclass
class WorkerResult:
    """What came back from one worker run."""

    status: str = "ok"  # ok | error | crash | timeout | flood | cancelled | no_result
    kind: str = ""  # finer classification: segfault, illegal_memory_access, cuda_oom, os_exit, ...
    message: str = ""
    # what the stage reported, validated as its model (stitch_mcp.stage_results.STAGE_RESULTS); a
    # plain dict only from the worker's selftest stage
    result: StageResult | dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    stage: str = ""  # last stage the worker announced
    returncode: int | None = None
    output: str = ""
    output_bytes: int = 0
    seconds: float = 0.0
    spare: bool = False  # ran in a spare worker started ahead of need
    # set once the worker has exited and what it left was killed (later than the result where
    # run_worker's `until_result` returned first)
    exited: threading.Event = field(default_factory=threading.Event)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.result is not None


class _Capture:
    """Reads a pipe, keeping the head and tail; calls on_flood once past the byte limit."""

    def __init__(self, stream, limit: int, on_flood: Callable[[], None]):
        self.stream, self.limit, self.on_flood = stream, limit, on_flood
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.flooded = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                if len(self.head) < HEAD_BYTES:
                    take = HEAD_BYTES - len(self.head)
                    self.head += chunk[:take]
                    chunk = chunk[take:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > 2 * TAIL_BYTES:
                        del self.tail[:-TAIL_BYTES]
                if self.total > self.limit and not self.flooded:
                    self.flooded = True
                    self.on_flood()
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = bytes(self.tail[-TAIL_BYTES:]).decode("utf-8", "replace")
        skipped = self.total - len(self.head) - min(len(self.tail), TAIL_BYTES)
        if skipped > 0:
            return f"{head}\n... [{skipped} bytes left out] ...\n{tail}"
        return head + tail
