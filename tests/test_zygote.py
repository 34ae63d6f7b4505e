"""The worker zygote (stitch_mcp.zygote): workers forked from one process that imported torch once
behave as fresh ones, hold nothing of the zygote's, and outlive its loss; it ends with its server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from faultkit import comm

from stitch_mcp import worker
from stitch_mcp.config import configure


def selftest(tmp_path, action: str, name: str, **kw) -> worker.WorkerResult:
    return worker.run_worker("selftest", {"action": action}, workdir=tmp_path / name, **{"timeout_s": 60, **kw})


@pytest.fixture
def no_spares():
    """Every worker started when its stage comes, so the test sees which way it was started."""
    configure(spare_workers=0)
    worker.drop_spares()
    yield
    configure()


def _zygotes() -> list[int]:
    """Our zygote (a worker it has just forked bears its name for a moment: children only)."""
    return [p.pid for p in psutil.Process().children() if comm(p.pid) == "stitch-zygote"]


@pytest.mark.timeout(120)
def test_a_forked_worker_is_a_fresh_worker_without_the_zygotes_socket(tmp_path, no_spares):
    r = selftest(tmp_path, "whoami", "forked")
    assert r.ok, r.message
    assert r.result["torch_imported"] and r.result["cwd"] == str(tmp_path / "forked")
    (zygote,) = _zygotes()
    zygotes_sockets = {f for f in (os.readlink(f"/proc/{zygote}/fd/{fd}") for fd in os.listdir(f"/proc/{zygote}/fd"))
                       if f.startswith("socket:")}
    assert zygotes_sockets and not zygotes_sockets & set(r.result["open_files"]), "the worker holds the zygote's socket"
    configure(spare_workers=0, fork_workers=False)
    r = selftest(tmp_path, "whoami", "fresh")
    assert r.ok and r.result["torch_imported"], r.message


@pytest.mark.timeout(120)
def test_a_worker_outlives_its_zygote_and_the_next_one_is_forked_again(tmp_path, no_spares):
    selftest(tmp_path, "ok", "warm")
    (zygote,) = _zygotes()
    started = time.monotonic()
    killed = []

    def on_event(ev):  # the stage has begun: take the zygote away under it
        if ev.get("event") == "stage" and ev.get("name") == "waiting for the device" and not killed:
            os.kill(zygote, signal.SIGKILL)
            killed.append(True)

    r = worker.run_worker("selftest", {"action": "wait_then_hang", "wait_s": 1, "then_s": 0},
                          workdir=tmp_path / "orphan", timeout_s=60, on_event=on_event)
    assert killed and r.ok and r.result == {"waited": True}, (killed, r.status, r.message)
    assert time.monotonic() - started < 30
    again = selftest(tmp_path, "whoami", "after")
    assert again.ok and again.result["torch_imported"], again.message
    assert _zygotes() and zygote not in _zygotes()


@pytest.mark.timeout(120)
def test_the_zygote_ends_with_its_server(tmp_path):
    server = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from stitch_mcp import worker
        r = worker.run_worker("selftest", {{"action": "ok"}}, workdir=Path({str(tmp_path)!r}) / "w", timeout_s=60)
        print(r.status, flush=True)
        sys.stdin.readline()
        os._exit(0)  # no atexit: as a server that is killed
    """)
    proc = subprocess.Popen([sys.executable, "-c", server], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ok"
        zygotes = [p.pid for p in psutil.Process(proc.pid).children() if comm(p.pid) == "stitch-zygote"]
        assert len(zygotes) == 1
        proc.stdin.close()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while psutil.pid_exists(zygotes[0]) and psutil.Process(zygotes[0]).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the zygote outlived its server"
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.gpu
def test_the_zygote_holds_no_gpu_device_file_its_forks_would_share(tmp_path, no_spares):
    """NVML or CUDA opened in the zygote would be shared by every worker it forks (torch.cuda then saw
    no GPU in some of them): its imports leave none open, and its workers see the GPU."""
    r = selftest(tmp_path, "cuda_devices", "gpu", env={"CUDA_VISIBLE_DEVICES": "0"})
    assert r.ok and len(r.result["uuids"]) == 1, r.message
    (zygote,) = _zygotes()
    held = [os.readlink(f"/proc/{zygote}/fd/{fd}") for fd in os.listdir(f"/proc/{zygote}/fd")]
    assert not [f for f in held if f.startswith("/dev/nvidia")], held
