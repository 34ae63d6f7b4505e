"""The candidate sandbox, through real processes at every level this machine allows: a program inside tries
each way out (tests/escape_program.py) and the test checks which ones the level blocks."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from timeout_report import record_wait

from stitch_mcp.config import configure
from stitch_mcp.sandbox import SandboxPolicy, holding_slot, kill_sandbox, probe_isolation, sandboxed

ESCAPE_PROGRAM = Path(__file__).with_name("escape_program.py")
ATTEMPTS = {"server_environ", "server_cmdline", "init_environ", "secret_env", "data_dir_file", "write_outside",
            "tcp_localhost", "signal_server", "kill_decoy", "stop_decoy"}
# What each level lets through (and says so in its warnings); the namespace levels let nothing through.
ESCAPES = {"bubblewrap": set(), "namespaces": set(),
           "uid": {"server_cmdline", "data_dir_file", "write_outside", "tcp_localhost"},
           "none": ATTEMPTS - {"secret_env", "init_environ"}}  # the host's pid 1 may hide its environ even from root
SECRET = "s3cret-" + uuid.uuid4().hex


@pytest.fixture(autouse=True)
def slot_zero():
    """These tests run their sandboxes in slot 0 and kill its uid whole: one at a time on this host
    (pytest-xdist's other worker, the isolation probe)."""
    with holding_slot(0):
        yield


@pytest.fixture(params=["bubblewrap", "namespaces", "uid", "none"])
def level(request):
    configure(sandbox=request.param)
    try:
        got = probe_isolation().level
        if got != request.param:
            pytest.skip(f"{request.param} is not available here (got {got})")
        yield request.param
    finally:
        configure()


@pytest.fixture
def host(monkeypatch):
    """What a server has and a candidate must not reach: secrets, a data dir, a listening port, a process."""
    monkeypatch.setenv("STITCH_AUTH_TOKEN", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    data = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="stitch-data-"))
    data.chmod(0o777)  # a sloppy data dir: only the mount namespace keeps it out of reach
    (data / "workspace.sqlite3").write_text("verdicts")
    (data / "workspace.sqlite3").chmod(0o644)
    work = Path(tempfile.mkdtemp(dir="/tmp", prefix="stitch-work-"))
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: [c.sendall(b"hi") for c in iter(lambda: listener.accept()[0], None)],
                     daemon=True).start()
    decoy = subprocess.Popen(["sleep", "60"])
    yield {"data": data, "work": work, "port": listener.getsockname()[1], "decoy": decoy}
    decoy.kill()
    decoy.wait()
    listener.close()
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)


def _pids_with(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def _kill_leftovers(marker: str) -> None:
    for pid in _pids_with(marker):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def _wait_gone(marker: str, timeout_s: float = 3.0) -> list[int]:
    t0 = time.monotonic()
    while (left := _pids_with(marker)) and time.monotonic() < t0 + timeout_s:
        time.sleep(0.02)
    record_wait("sandboxed processes gone", timeout_s, time.monotonic() - t0, expired=bool(left))
    return left


def _run_escape(host, policy: SandboxPolicy, marker: str):
    targets = {"server_pid": os.getpid(), "secret": SECRET, "data_file": str(host["data"] / "workspace.sqlite3"),
               "outside_dir": str(host["data"]), "port": host["port"], "decoy_pid": host["decoy"].pid,
               "daemon_marker": marker}
    read_end, write_end = os.pipe()
    memfd = os.memfd_create("inputs")
    os.write(memfd, b"inputs from the judge")
    targets.update(pipe_fd=write_end, memfd=memfd)
    cmd = sandboxed([sys.executable, str(ESCAPE_PROGRAM), json.dumps(targets)], policy)
    proc = subprocess.Popen(**cmd.popen_kwargs(pass_fds=(write_end, memfd)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    os.close(write_end)
    os.close(memfd)
    out, err = proc.communicate(timeout=60)
    piped = os.read(read_end, 100)
    os.close(read_end)
    assert proc.returncode == 0, err.decode()
    return cmd, proc, json.loads(out), piped


def test_each_escape_is_blocked_as_the_level_promises(level, host):
    marker = f"stitch-daemon-{uuid.uuid4().hex}"
    policy = SandboxPolicy(workdir=host["work"], read_only=[ESCAPE_PROGRAM.parent])
    cmd, proc, results, piped = _run_escape(host, policy, marker)
    try:
        escaped = {name for name in ATTEMPTS if results[name].startswith("escaped")}
        if level in ("bubblewrap", "namespaces"):
            assert not escaped, results
        elif level == "uid":  # only what its warnings admit (a /proc mounted with hidepid hides cmdlines too)
            assert escaped <= ESCAPES[level] and {"data_dir_file", "write_outside"} <= escaped, results
        else:
            assert escaped >= ESCAPES[level], results
        assert not (host["data"] / "pwned").exists() or "write_outside" in ESCAPES[level]
        assert host["decoy"].poll() is None or "kill_decoy" in ESCAPES[level]
        # inherited descriptors keep their numbers inside every level
        assert piped == b"through the pipe" and results["memfd"] == "inputs from the judge"
        # the isolation it reports is the one applied
        assert cmd.isolation.level == level
        if level in ("bubblewrap", "namespaces"):
            assert results["pid"] <= 2 and results["visible_pids"] <= 3
            assert any("pid namespace" in m for m in cmd.isolation.mechanisms)
            assert any("network namespace" in m for m in cmd.isolation.mechanisms)
        if cmd.uid is not None:
            assert results["uid"] == cmd.uid != os.getuid()
        elif level == "namespaces":  # rootless: root of its own user namespace, without capabilities
            assert results["uid"] == 0 and any("user namespace" in m for m in cmd.isolation.mechanisms)
        else:
            assert results["uid"] == os.getuid()
        # a double-forked setsid daemon: gone once the main process exits where there is a pid namespace,
        # gone after kill_sandbox where there is a dedicated uid
        if level in ("bubblewrap", "namespaces"):
            assert not _wait_gone(marker), "daemon outlived the sandbox"
        elif level == "uid":
            kill_sandbox(proc, cmd)
            assert not _wait_gone(marker)
        else:
            assert _pids_with(marker) and any("no isolation" in w for w in cmd.isolation.warnings)
    finally:
        _kill_leftovers(marker)


@pytest.mark.parametrize("pid_namespace", [True, False], ids=["own-pid-ns", "server-pid-ns"])
def test_kill_sandbox_ends_every_process_it_started(level, host, pid_namespace):
    if level == "none" or (level == "uid" and pid_namespace is False):
        pytest.skip("without a pid namespace or a uid of its own, re-parented daemons cannot be found")
    if not pid_namespace and os.geteuid() != 0:
        pytest.skip("without a pid namespace only a dedicated uid (root) finds re-parented daemons")
    marker = f"stitch-tree-{uuid.uuid4().hex}"
    split = f"'{marker[:8]}' + '{marker[8:]}'"  # split so that only the children's argv holds the marker
    code = ("import subprocess, sys, time; "
            f"[subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {split}], "
            "start_new_session=True) for _ in range(3)]; print('up', flush=True); time.sleep(60)")
    cmd = sandboxed([sys.executable, "-c", code], SandboxPolicy(workdir=host["work"], pid_namespace=pid_namespace))
    assert any("pid namespace" in m for m in cmd.isolation.mechanisms) == (pid_namespace and level != "uid")
    proc = subprocess.Popen(**cmd.popen_kwargs(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        assert line == b"up\n", (proc.wait(), proc.stderr.read())
        t0 = time.monotonic()
        while len(_pids_with(marker)) < 3 and time.monotonic() < t0 + 10:
            time.sleep(0.02)
        assert len(_pids_with(marker)) == 3
        record_wait("three sandboxed children up", 10, time.monotonic() - t0)
        assert kill_sandbox(proc, cmd) is not None
        assert not _wait_gone(marker)
    finally:
        _kill_leftovers(marker)


def test_secrets_are_refused_and_the_environment_is_an_allow_list(monkeypatch, tmp_path):
    monkeypatch.setenv("STITCH_AUTH_TOKEN", SECRET)
    monkeypatch.setenv("SOME_SERVER_SETTING", "x")
    with pytest.raises(ValueError, match="STITCH_AUTH_TOKEN"):
        sandboxed(["true"], SandboxPolicy(workdir=tmp_path / "w", env={"STITCH_AUTH_TOKEN": SECRET}))
    cmd = sandboxed(["true"], SandboxPolicy(workdir=tmp_path / "w", env={"CUDA_VISIBLE_DEVICES": "1"}))
    assert cmd.env["CUDA_VISIBLE_DEVICES"] == "1" and cmd.env["HOME"] == str(cmd.cwd)
    assert cmd.env["TMPDIR"].startswith(str(cmd.cwd)) and "SOME_SERVER_SETTING" not in cmd.env
    assert SECRET not in json.dumps(cmd.env)


def test_a_missing_bwrap_falls_back_and_says_why(monkeypatch):
    monkeypatch.setenv("STITCH_BWRAP", "/nonexistent/bwrap")
    configure()
    try:
        iso = probe_isolation()
        assert iso.level != "bubblewrap"
        assert any("bubblewrap unavailable" in w and "bwrap not found" in w for w in iso.warnings)
    finally:
        monkeypatch.delenv("STITCH_BWRAP")
        configure()


def test_a_build_sees_its_includes_and_not_the_data_dir(host):
    """A C++ build in the strongest sandbox here: a granted include folder works; `#include` of a file in the
    data dir (which would print its lines in the diagnostics) finds nothing."""
    if probe_isolation().level not in ("bubblewrap", "namespaces"):
        pytest.skip("no mount namespace here")
    include = host["data"].parent / f"stitch-include-{uuid.uuid4().hex}"
    include.mkdir()
    try:
        (include / "twice.h").write_text("inline int twice(int x) { return 2 * x; }\n")
        (host["work"] / "ok.cpp").write_text('#include "twice.h"\nint main() { return twice(2) - 4; }\n')
        (host["work"] / "leak.cpp").write_text(f'#include "{host["data"] / "workspace.sqlite3"}"\nint main() {{}}\n')
        policy = SandboxPolicy(workdir=host["work"], read_only=[include])
        build = sandboxed(["c++", f"-I{include}", "ok.cpp", "-o", "ok"], policy)
        assert subprocess.run(**build.popen_kwargs(), capture_output=True, timeout=120).returncode == 0
        assert subprocess.run(**sandboxed(["./ok"], policy).popen_kwargs(), timeout=60).returncode == 0
        leak = subprocess.run(**sandboxed(["c++", "-c", "leak.cpp"], policy).popen_kwargs(), capture_output=True,
                              text=True, timeout=120)
        assert leak.returncode != 0 and "No such file" in leak.stderr and "verdicts" not in leak.stderr
    finally:
        shutil.rmtree(include, ignore_errors=True)


@pytest.mark.parametrize("layout", ["grant inside workdir", "workdir inside grant"])
def test_nested_grants_and_odd_names(level, layout):
    """A read-only grant inside the workdir stays read-only; a workdir inside a grant stays writable;
    names with spaces and '#' survive every level's mount plan."""
    if level not in ("bubblewrap", "namespaces"):
        pytest.skip("no mount namespace at this level")
    top = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="stitch nest #"))
    top.chmod(0o755)
    try:
        if layout == "grant inside workdir":
            work, grant = top / "work dir", top / "work dir" / "built ext"
        else:
            grant, work = top / "granted", top / "granted" / "work dir"
        grant.mkdir(parents=True)
        work.mkdir(parents=True, exist_ok=True)
        (grant / "module.txt").write_text("built")
        (grant / "module.txt").chmod(0o644)
        code = (f"print(open({str(grant / 'module.txt')!r}).read()); open('mine.txt', 'w').write('ok'); "
                f"open({str(grant / 'forged.txt')!r}, 'w')")
        cmd = sandboxed([sys.executable, "-c", code], SandboxPolicy(workdir=work, read_only=[grant]))
        run = subprocess.run(**cmd.popen_kwargs(), capture_output=True, text=True, timeout=60)
        assert run.stdout.strip() == "built", run.stderr
        assert "Read-only file system" in run.stderr and not (grant / "forged.txt").exists()
        assert (work / "mine.txt").read_text() == "ok"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_doctor_prints_the_isolation_level():
    from stitch_mcp.doctor import isolation_line

    iso = probe_isolation()
    line = isolation_line()
    assert line.detail.startswith(f"{iso.level}: ") and all(w in line.detail for w in iso.warnings)
    assert line.status == ("ok" if iso.level in ("bubblewrap", "namespaces") else "warning")


def test_a_profiler_in_the_sandbox_finds_its_real_install(tmp_path):
    """CUDA's `bin/ncu` is a launcher that looks for `nsight-compute*` beside the toolkit; on a GPU host
    that folder is a link into /opt/nvidia. The profilers' sandbox grants the tool's install and the real
    folders it launches (an H100 run said "Nsight Compute is not installed" without them)."""
    from stitch_mcp.judge_room import candidate_sandbox

    if probe_isolation().level not in ("bubblewrap", "namespaces"):
        pytest.skip("no mount namespace here")
    top = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="stitch-tools-"))
    top.chmod(0o755)
    try:
        real = top / "opt" / "nvidia" / "nsight-compute" / "2099.1"
        real.mkdir(parents=True)
        (real / "ncu").write_text('#!/bin/sh\necho "real ncu $*"\n')
        (top / "cuda" / "bin").mkdir(parents=True)
        (top / "cuda" / "nsight-compute-2099.1").symlink_to(real)
        launcher = top / "cuda" / "bin" / "ncu"
        launcher.write_text('#!/bin/sh\nfor d in "$(dirname "$0")"/../nsight-compute*; do\n'
                            '  [ -x "$d/ncu" ] && exec "$d/ncu" "$@"\ndone\necho "not installed"; exit 1\n')
        for f in (real / "ncu", launcher):
            f.chmod(0o755)
        for d in [top, *top.rglob("*")]:
            if d.is_dir() and not d.is_symlink():
                d.chmod(0o755)
        work = tmp_path / "work"
        work.mkdir()
        with candidate_sandbox([str(launcher), "--version"], work, {}, gpu=False) as box:
            run = subprocess.run(**box.popen_kwargs(), capture_output=True, text=True, timeout=60)
        assert run.stdout.strip() == "real ncu --version", run.stdout + run.stderr
    finally:
        shutil.rmtree(top, ignore_errors=True)


# A program that reports the cores it may run on, tries to widen them (itself and a child it starts
# afterwards), and reports again, once per line it reads.
WIDEN_PROGRAM = """
import os, subprocess, sys
for _ in sys.stdin:
    try:
        os.sched_setaffinity(0, set(range(os.cpu_count())))
    except OSError:
        pass
    child = subprocess.run([sys.executable, "-c", "import os; os.sched_setaffinity(0, set(range(os.cpu_count())))"
                            "; print(sorted(os.sched_getaffinity(0)))"], capture_output=True, text=True).stdout
    print(sorted(os.sched_getaffinity(0)), child.strip(), flush=True)
"""


def test_a_held_slot_cannot_widen_its_cores(level, tmp_path):
    """The judge holds a sandbox to one core through its slot's cpuset: neither the process nor a child
    it starts can widen its affinity past it; released, both may run anywhere again."""
    from stitch_mcp import cpusets

    if cpusets.unavailable() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip(f"no cpuset to hold here: {cpusets.unavailable() or 'one core'}")
    cmd = sandboxed([sys.executable, "-c", WIDEN_PROGRAM], SandboxPolicy(workdir=tmp_path / "work"))
    assert cmd.cpuset is not None and "cpuset" in cmd.isolation.line()
    proc = subprocess.Popen(**cmd.popen_kwargs(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    every = sorted(cmd.cpuset.cpus())
    assert set(every) == os.sched_getaffinity(0), "a new sandbox's slot has every core the server has"
    try:
        core = every[-1]
        cmd.cpuset.hold({core})
        proc.stdin.write("held\n")
        proc.stdin.flush()
        assert proc.stdout.readline().split() == [f"[{core}]", f"[{core}]"]
        cmd.cpuset.release()
        proc.stdin.write("released\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == f"{every} {every}"
    finally:
        kill_sandbox(proc, cmd)


def test_a_slots_cpu_counts_every_process_it_starts(level, tmp_path):
    """The CPU the judge reads from a slot's cgroup counts the work of a child the sandboxed program
    starts and reaps, and of one it never reaps: no process of its own escapes it."""
    from stitch_mcp import cpusets

    if cpusets.unavailable():
        pytest.skip(f"no slot cgroups here: {cpusets.unavailable()}")
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    program = ("import os, subprocess, sys\n"
               f"subprocess.run([sys.executable, '-c', {burn!r}])\n"
               f"left = subprocess.Popen([sys.executable, '-c', {burn + 'print(1)'!r}], stdout=subprocess.PIPE)\n"
               "print(left.stdout.read().decode().strip(), flush=True)\nos._exit(0)\n")
    cmd = sandboxed([sys.executable, "-c", program], SandboxPolicy(workdir=tmp_path / "work"))
    before = cmd.cpuset.used_ms()
    proc = subprocess.Popen(**cmd.popen_kwargs(), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.read().strip() == "1"
        assert cmd.cpuset.used_ms() - before >= 550
    finally:
        kill_sandbox(proc, cmd)
