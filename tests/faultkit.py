"""Shared helpers of the fault, load and Ray tests: real server processes and a /proc scan for what
they leave behind.

Every process a test server starts inherits a unique marker in its environment
(STITCH_TEST_MARKER=<uuid>): workers, compilers, a candidate's children, even ones that left the
process group or the session. `leftovers(marker)` lists the live ones (zombies have no environment).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from timeout_report import record_wait

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path(__file__).resolve().parent / "programs"


def prog(name: str) -> str:
    return str(PROGRAMS / f"{name}.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_marker() -> str:
    return f"stitch-test-{uuid.uuid4().hex[:12]}"


def _environ_has(pid: str, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read()
    except OSError:
        return False


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def working_dir(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def idle_spare(pid: int) -> bool:
    """A spare worker no stage was given yet (given one, stitch_mcp.worker renames itself), or the
    worker zygote spares are forked from (stitch_mcp.zygote: its command line ends the same)."""
    line = cmdline(pid)
    return comm(pid) != "stitch-worker" and " -m stitch_mcp.worker " in line and line.endswith(" --spare")


def idle_spare_of(pid: int, owners: set[int]) -> bool:
    """An idle spare worker started by one of `owners` or by a live server, that spare's lifeline
    watchdog (a fork of it), or the zygote it was forked from."""
    if not idle_spare(pid):
        return False
    parent = parent_pid(pid)
    while idle_spare(parent):  # the watchdog's spare, a spare's zygote
        parent = parent_pid(parent)
    return parent in owners or " -m stitch_mcp serve" in cmdline(parent)


def parent_pid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("PPid:"))
    except (OSError, StopIteration, ValueError):
        return 0


def leftovers(marker: str, exclude: set[int] | None = None) -> list[tuple[int, str]]:
    """Live processes carrying the marker, other than `exclude` (the servers themselves) and the
    idle spare workers of those servers with their watchdogs (a stopped server's are leftovers)."""
    needle = f"STITCH_TEST_MARKER={marker}".encode()
    exclude = exclude or set()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in exclude or int(pid) == os.getpid():
            continue
        if _environ_has(pid, needle):
            cmd = cmdline(int(pid))
            if " -m stitch_mcp serve" in cmd:  # a server itself: alive by design
                continue
            if idle_spare_of(int(pid), exclude):
                continue
            found.append((int(pid), f"{cmd[:160]} (parent {parent_pid(int(pid))}, name {comm(int(pid))})"))
    return found


def wait_no_leftovers(marker: str, exclude: set[int] | None = None, timeout: float = 10.0) -> list:
    t0 = time.monotonic()
    deadline = t0 + timeout
    while True:
        left = leftovers(marker, exclude)
        if not left or time.monotonic() > deadline:
            record_wait("wait_no_leftovers", timeout, time.monotonic() - t0, expired=bool(left))
            return left
        time.sleep(0.2)


def server_env(marker: str, data_dir: Path, **settings: str) -> dict[str, str]:
    # the caller's PYTHONPATH stays (on the GPU machine mcp and pydantic come from a wheel folder)
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    path = os.pathsep.join(dict.fromkeys([str(ROOT), *inherited]))
    env = {**os.environ, "PYTHONPATH": path, "STITCH_TEST_MARKER": marker, "STITCH_DATA_DIR": str(data_dir)}
    env.update({k: str(v) for k, v in settings.items()})
    return env


@dataclass
class HttpServer:
    url: str
    proc: subprocess.Popen
    marker: str
    data_dir: Path
    log: Path
    extra: dict = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def start_http_server(marker: str, data_dir: Path, *args: str, env: dict | None = None,
                      timeout: float = 60.0) -> HttpServer:
    """`stitch-mcp serve --http` on a free loopback port, in its own process group."""
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"server-{port}.log"
    out = data_dir.parent / f"server-{port}.stdout"
    proc = subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve", "--http", "--port", str(port), *args],
                            env=env or server_env(marker, data_dir), cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=open(out, "wb"), stderr=open(log, "wb"), start_new_session=True)
    t0 = time.monotonic()
    deadline = t0 + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            record_wait("http server start", timeout, time.monotonic() - t0)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"server did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
    return HttpServer(f"http://127.0.0.1:{port}/mcp", proc, marker, data_dir, log, {"stdout": out})


def stop_server(server: HttpServer, sig: int = signal.SIGTERM) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(sig)
        try:
            server.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(timeout=10)


@contextmanager
def http_server(marker: str, data_dir: Path, *args: str, env: dict | None = None):
    server = start_http_server(marker, data_dir, *args, env=env)
    try:
        yield server
    finally:
        stop_server(server)


# ------------------------------------------------------------------ MCP helpers


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def resource_json(client, uri: str):
    res = await client.read_resource(uri)
    return json.loads(res.contents[0].text)


async def call_until_done(client, tool: str, args: dict, *, max_wait_s: float = 20, deadline_s: float = 300,
                          stage_limits: dict[str, float] | None = None) -> dict:
    """Call a long tool and follow job_status until it is done; returns the tool's structured result.
    `stage_limits` (the server's, default its defaults: build 300 s, run 120 s) are what the timeout
    report holds the report's stage seconds to."""
    t0 = time.monotonic()
    result = await client.call_tool(tool, {**args, "max_wait_s": max_wait_s})
    assert not result.is_error, text_of(result)
    out = result.structured_content
    start = time.monotonic()
    followed = 0
    while out.get("status") == "running":
        assert time.monotonic() - start < deadline_s, f"{tool} still running after {deadline_s} s"
        job = await client.call_tool("job_status", {"job_id": out["job_id"], "max_wait_s": max_wait_s})
        assert not job.is_error, text_of(job)
        info = job.structured_content
        followed += 1
        if info["status"] == "running":
            continue
        assert info["status"] == "done", info
        out = info["result"]
    record_wait(f"{tool} until done (deadline_s)", deadline_s, time.monotonic() - t0)
    limits = {"build": 300.0, "run": 120.0, **(stage_limits or {})}
    for stage, seconds in (out.get("stage_seconds") or {}).items():
        if stage in limits:
            record_wait(f"server {tool} stage {stage}", limits[stage], seconds,
                        expired=out.get("error_kind") == "timeout" and stage == "run")
    out["_followed_job_status"] = followed
    return out
