"""Worker processes through `run_worker`: spare workers (started ahead of need, torch imported)
start their stage as a fresh worker would, and how a worker ended is classified."""

from __future__ import annotations

import os
import time

import pytest
from faultkit import comm, idle_spare_of
from timeout_report import record_wait

from stitch_mcp import worker
from stitch_mcp.config import configure


def selftest(tmp_path, action: str, name: str = "w", **kw) -> worker.WorkerResult:
    return worker.run_worker("selftest", {"action": action}, workdir=tmp_path / name, **{"timeout_s": 60, **kw})


def idle_spares(expect: bool = True) -> list[int]:
    """Our idle spares, after waiting up to 5 s for them to be as `expect`ed (a process just
    forked shows its parent's command line until it has exec'd)."""
    t0 = time.monotonic()
    while True:
        found = [p for p in worker._descendants(os.getpid())
                 if idle_spare_of(p, {os.getpid()}) and comm(p) != "stitch-zygote"]
        if bool(found) == expect or time.monotonic() > t0 + 5:
            record_wait(f"idle spares {'up' if expect else 'gone'}", 5, time.monotonic() - t0,
                        expired=bool(found) != expect)
            return found
        time.sleep(0.05)


@pytest.fixture
def one_spare():
    configure(spare_workers=1)
    worker.drop_spares()
    yield
    configure()


@pytest.mark.timeout(120)  # 13 s alone, 22 s beside another test on 2 cores
def test_a_spare_starts_its_stage_like_a_fresh_worker(tmp_path, one_spare, monkeypatch):
    first = selftest(tmp_path, "ok", "first")
    assert first.ok and first.result == {"value": 42} and "hello from the worker" in first.output
    assert not first.spare  # none was waiting yet; one is started after the stage
    assert idle_spares()
    monkeypatch.setenv("STITCH_PROBE", "set after the spare started")
    r = selftest(tmp_path, "whoami", "second", env={"STITCH_EXTRA": "1"})
    assert r.ok and r.spare, r.message
    got = r.result
    assert got["torch_imported"]  # imported while it waited
    assert got["cwd"] == str(tmp_path / "second") and got["path0"] == got["cwd"]
    assert got["probe"] == "set after the spare started"  # the environment of now, not of its start
    assert got["stdin"] == ""  # nothing of the parent's to read
    assert got["inductor_threads"] == 1  # no pool of compile processes per worker
    assert got["rooms_started"] == 2  # a spare starts the two rooms a run stage judges with
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "3")
    r = selftest(tmp_path, "whoami", "third")
    assert r.ok and r.spare and r.result["inductor_threads"] == 3  # its order's, though its warm-up read it before
    own = selftest(tmp_path, "whoami", "fourth", spare=False)
    assert own.ok and not own.spare and own.result["rooms_started"] == 0  # started for another stage: none


def test_timed_processes_keep_freed_memory_for_reuse(tmp_path):
    """Workers and rooms of the CPU path start with fixed malloc thresholds (outcomes.MALLOC_TUNABLES): a freed large
    block stays mapped, so a CPU op's fresh output does not page-fault in again on some calls and
    not on others (torch.relu over 4M floats: 0.5 or 3.3 ms by turns without them)."""
    from stitch_mcp.cuda_tools import nvidia_devices
    from stitch_mcp.judge_room import RoomClient
    from stitch_mcp.outcomes import MALLOC_TUNABLES

    if nvidia_devices():
        pytest.skip("the GPU path leaves malloc as it is")
    r = selftest(tmp_path, "malloc_keeps_freed")
    assert r.ok and r.result["kept"], r.message
    room = RoomClient.spawn(tmp_path / "rooms", gpu=False)
    try:
        assert room.command.popen_kwargs()["env"]["GLIBC_TUNABLES"] == MALLOC_TUNABLES
    finally:
        room.close()


def test_the_judges_inductor_cache_is_a_folder_of_the_servers_own(tmp_path, monkeypatch):
    """Judges load and run the code inductor compiles for torch.compile's baseline from its cache:
    not /tmp/torchinductor_<user>, which a candidate sandboxed only by another uid could make first,
    but a folder in the server's cache dir that only the server's user may enter; a room does not
    get it. A cache dir the user chose stays."""
    import stat

    from stitch_mcp.config import get_settings
    from stitch_mcp.judge_room import RoomClient
    from stitch_mcp.worker import worker_env

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    env = worker_env()
    folder = get_settings().inductor_dir
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(folder)
    assert folder.stat().st_uid == os.geteuid() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "chosen"))
    assert worker_env()["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "chosen")
    room = RoomClient.spawn(tmp_path / "rooms", gpu=False)  # started from a worker, whose environment has it
    try:
        assert "TORCHINDUCTOR_CACHE_DIR" not in room.command.popen_kwargs()["env"]
    finally:
        room.close()


@pytest.mark.timeout(120)  # six workers: 18 s alone, 29 s beside another test on 2 cores
def test_crashes_in_a_spare_are_classified(tmp_path, one_spare):
    selftest(tmp_path, "ok", "warm")  # leaves a spare for the next
    for action, kind in (("segfault", "segfault"), ("exit", "os_exit"), ("raise", "illegal_memory_access")):
        r = selftest(tmp_path, action, action)
        assert r.spare and r.kind == kind, (action, r.status, r.kind, r.message)
    r = selftest(tmp_path, "hang", "hang", timeout_s=3)
    assert r.spare and r.status == "timeout"
    r = selftest(tmp_path, "flood", "flood", flood_bytes=1 << 20)
    assert r.spare and r.kind == "output_flood"


def test_no_spares_when_set_to_zero_and_none_left_after_drop(tmp_path):
    configure(spare_workers=0)
    try:
        worker.drop_spares()
        r = selftest(tmp_path, "ok")
        assert r.ok and not r.spare and not idle_spares(expect=False)
    finally:
        configure()
    selftest(tmp_path, "ok", "again")
    assert idle_spares()
    worker.drop_spares()
    assert not idle_spares(expect=False)


@pytest.mark.gpu
def test_a_spare_sees_only_the_gpu_its_order_names(tmp_path, one_spare):
    """A spare imports torch before its device is chosen; the CUDA driver must not have started,
    or CUDA_VISIBLE_DEVICES in its order would be ignored and two checks could share a GPU."""
    import pynvml

    pynvml.nvmlInit()
    uuids = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(pynvml.nvmlDeviceGetCount())]
    selftest(tmp_path, "ok", "warm")  # leaves a spare for the next
    for index, uuid in enumerate(uuids[:2]):
        r = selftest(tmp_path, "cuda_devices", f"gpu{index}",
                     env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(index)})
        assert r.ok, r.message
        assert [u.removeprefix("GPU-") for u in r.result["uuids"]] == [str(uuid).removeprefix("GPU-")]
        assert r.spare, "the spare had started the CUDA driver, so it ran as a fresh worker instead"
    r = selftest(tmp_path, "cuda_devices", "none", env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.ok and r.result["uuids"] == []


def _worker_pid() -> int:
    """The worker running a stage: the one descendant that has named itself `stitch-worker`."""
    for pid in worker._descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/comm", "rb") as fh:
                if fh.read().strip() == worker.WORKING_NAME:
                    return pid
        except OSError:
            continue
    raise AssertionError("no stitch-worker process found")


def _signal_at_stage(signum: int):
    """An on_event that sends the worker `signum` once it announces its stage."""
    def on_event(ev):
        if ev.get("event") == "stage":
            os.kill(_worker_pid(), signum)
    return on_event


@pytest.mark.timeout(180)  # nine workers, one a 6 s hang: 34 s alone, 46 s beside another test on 2 cores
def test_each_ending_has_its_message(tmp_path, one_spare, monkeypatch):
    """How a worker ended, word for word: timeout, flood, cancelled, an error result, a signal, an exit."""
    import signal
    import threading

    during = " during stage 'selftest'"
    # 6 s: a spare handed its order on a loaded 2-core host took over 3 s to reach the stage
    r = selftest(tmp_path, "hang", "hang", timeout_s=6)
    assert (r.status, r.kind) == ("timeout", "timeout")
    assert r.message == ("timed out after 6 s during stage 'selftest' (a hung kernel, an infinite loop, "
                         "a deadlock or a very slow build)")
    r = selftest(tmp_path, "flood", "flood", flood_bytes=1 << 20)
    assert (r.status, r.kind) == ("flood", "output_flood")
    assert r.message == ("the candidate flooded its output (over 1 MB) during stage 'selftest'; "
                         "remove debug printing (printf in kernels)")

    def cancel_soon(kill):
        threading.Timer(1.0, kill).start()
        return lambda: None
    r = selftest(tmp_path, "hang", "cancel", register_kill=cancel_soon)
    assert (r.status, r.kind, r.message) == ("cancelled", "cancelled", "cancelled by the caller")
    r = selftest(tmp_path, "raise", "raise")
    assert (r.status, r.kind) == ("error", "illegal_memory_access")
    assert r.message == "RuntimeError: CUDA error: an illegal memory access was encountered"
    r = selftest(tmp_path, "ok", "ok")
    assert (r.status, r.kind, r.message, r.returncode) == ("ok", "", "", 0)
    r = selftest(tmp_path, "segfault", "segfault")
    assert (r.status, r.kind) == ("crash", "segfault")
    assert r.message == ("the worker crashed with a segmentation fault (SIGSEGV): a host-side invalid memory "
                         "access" + during)
    r = selftest(tmp_path, "exit", "exit")
    assert (r.status, r.kind) == ("no_result", "os_exit")
    assert r.message == ("the worker exited with status 3 during stage 'selftest' without reporting a result "
                         "(os._exit or sys.exit called by the candidate, or a fatal error)")
    r = selftest(tmp_path, "hang", "abort", on_event=_signal_at_stage(signal.SIGABRT))
    assert (r.status, r.kind) == ("crash", "abort")
    assert r.message == ("the worker aborted (SIGABRT): a failed assertion or an uncaught C++ exception" + during)
    # What the output says names a crash better than an abort or a kill, or an exit without a result.
    monkeypatch.setattr(worker, "classify_error_text", lambda text: ("cuda_oom", "the GPU ran out of memory"))
    r = selftest(tmp_path, "hang", "abort_named", on_event=_signal_at_stage(signal.SIGABRT))
    assert (r.status, r.kind, r.message) == ("crash", "cuda_oom", "the GPU ran out of memory" + during)
    r = selftest(tmp_path, "segfault", "segfault_named")
    assert (r.status, r.kind) == ("crash", "segfault")  # a segfault keeps its own name
    r = selftest(tmp_path, "exit", "exit_named")
    assert (r.status, r.kind, r.message) == ("no_result", "cuda_oom", "the GPU ran out of memory" + during)


def test_a_result_is_read_before_its_worker_has_exited(tmp_path):
    """`until_result` (the run stage): the result is used as soon as it comes; the worker's exit
    (a CUDA context's teardown) and the clean-up after it go on in the background until `settle`."""
    import psutil

    def exiting_workers() -> list[int]:
        found = []
        for pid in worker._descendants(os.getpid()):
            try:
                if psutil.Process(pid).name() == "stitch-worker":
                    found.append(pid)
            except psutil.Error:  # gone meanwhile
                pass
        return found

    r = worker.run_worker("selftest", {"action": "ok", "exit_after_s": 6}, workdir=tmp_path / "w", timeout_s=60,
                          until_result=True)
    assert r.ok and r.result == {"value": 42}, (r.status, r.message)
    assert exiting_workers()  # still exiting
    worker.settle()
    assert not exiting_workers()


@pytest.mark.timeout(120)  # a 25 s wait, then a 10 s limit: 38 s on 2 cores, idle or loaded
def test_waiting_for_the_device_does_not_count_against_the_time_limit(tmp_path):
    """Twelve checks at once made a judge wait past its limit for the device (an H100, 2026-11-25):
    a wait is not a hang. Time spent in the stage after the wait still counts."""
    # limits far above a loaded host's worker start-up (CI: over 2.5 s), waits far above the limits
    r = worker.run_worker("selftest", {"action": "wait_then_hang", "wait_s": 25, "then_s": 0},
                          workdir=tmp_path / "waits", timeout_s=10)
    assert r.ok and r.result == {"waited": True}, (r.status, r.message)
    r = worker.run_worker("selftest", {"action": "wait_then_hang", "wait_s": 1, "then_s": 120},
                          workdir=tmp_path / "hangs", timeout_s=10)
    record_wait("a hang after a device wait ends, past its 1 s wait and 10 s limit", 29, r.seconds - 11)
    assert r.status == "timeout" and r.stage == "selftest" and r.seconds < 40, (r.status, r.stage, r.seconds)
