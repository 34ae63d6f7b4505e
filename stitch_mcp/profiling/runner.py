"""Running a profiler or driver in its own process group: a timeout or a cancel kills the whole
group (ncu, the Python it launched, any compiler it spawned), so nothing is left running."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.jobs import Progress

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    returncode: int
    output: str
    seconds: float
    timed_out: bool = False
    cancelled: bool = False


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children that ignored SIGTERM, or outlived the leader
    except (ProcessLookupError, PermissionError):
        pass


def run_group(cmd: list[str], *, timeout_s: float, cwd: Path | None = None, env: dict | None = None,
              progress: Progress | None = None, log_path: Path | None = None, sandboxed: bool = False) -> RunResult:
    """Run cmd in a new session; stdout+stderr go to a file (never to our stdout), returned as text.
    `sandboxed`: it runs candidate code, so it runs in the candidate's sandbox with `cwd` as its
    only writable folder (stitch_mcp.sandbox), and everything it started is killed afterwards."""
    if not sandboxed:
        return _run_group(cmd, timeout_s, cwd, env, progress, log_path, None)
    from stitch_mcp.judge_room import ROOM_ENV, candidate_sandbox
    from stitch_mcp.sandbox import kill_sandbox

    assert cwd is not None
    # what a room is given, so the candidate's extensions have the keys its check built them under
    # (CXX is in the build cache's key: without it every profile on an H100 rebuilt, 10 s under ncu)
    allowed = {k: v for k, v in (env or {}).items()
               if k in ROOM_ENV or k.startswith(("CUDA_", "PYTHON", "TORCH", "NV"))}
    allowed["TORCH_EXTENSIONS_DIR"] = str(cwd / "torch_extensions")
    with candidate_sandbox(cmd, cwd, allowed, gpu=True) as box:
        return _run_group(box.argv, timeout_s, cwd, box.env, progress, log_path,
                          lambda proc: kill_sandbox(proc, box))


def _run_group(cmd, timeout_s, cwd, env, progress, log_path, kill_box) -> RunResult:
    started = time.monotonic()
    log_path = log_path or Path(cwd or ".") / "run.log"
    log.info("running: %s", " ".join(cmd))
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        remove = progress.on_cancel(lambda: _kill_group(proc)) if progress else (lambda: None)
        timed_out = False
        try:
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - started > timeout_s:
                        timed_out = True
                        _kill_group(proc)
                        proc.wait()
                        break
                    if progress is not None and progress.cancelled:
                        _kill_group(proc)
                        proc.wait()
                        break
        finally:
            remove()
            if kill_box is not None:
                kill_box(proc)
            if proc.poll() is None:
                _kill_group(proc)
            else:
                # the leader exited: make sure it left no children behind in its group
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    text = log_path.read_text(errors="replace")
    return RunResult(proc.returncode if proc.returncode is not None else -9, text,
                     time.monotonic() - started, timed_out, bool(progress and progress.cancelled))


def python_env() -> dict[str, str]:
    """Environment for a child Python that must import stitch_mcp (also from a source checkout)."""
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    try:
        from stitch_mcp.config import get_settings

        env.setdefault("TORCH_EXTENSIONS_DIR", str(get_settings().build_dir / "torch_extensions"))
    except Exception:  # settings are optional for the driver
        pass
    return env


def python_exe() -> str:
    return sys.executable


def tail(text: str, n: int = 3000) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def keep_work_dir(work: Path) -> None:
    """With STITCH_PROFILE_KEEP=DIR, copy a profile's small outputs (JSON, CSV, logs, SQLite) there:
    material for parser fixtures and for debugging. Reports (.ncu-rep, .nsys-rep) are left out."""
    import shutil

    keep = os.environ.get("STITCH_PROFILE_KEEP")
    if not keep:
        return
    dest = Path(keep) / work.name
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for f in work.iterdir():
            if f.is_file() and f.suffix in (".json", ".csv", ".log", ".sqlite", ".py"):
                shutil.copy2(f, dest / f.name)
    except OSError as exc:
        log.warning("could not keep %s: %s", work, exc)
