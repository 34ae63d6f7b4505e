"""Faults on the CPU path, through a real server process: each candidate that crashes, hangs, eats
memory, floods its output, exits or leaves work behind gets a verdict naming the cause, and then

- the server keeps serving (another compile_and_check on the same server passes),
- nothing is left running (every process the server starts carries a marker in its environment;
  /proc is scanned for live ones, whatever their process group or session),
- the workspace is intact (the report is readable through the stitch:// resources).

The C++ faults share one extension source (`stitch_faults`, each candidate calls a different
function of it), so it is compiled once per session; later candidates import it from the build
cache. The last test kills the server with SIGKILL in the middle of a check and restarts it.
GPU-only faults: tests/test_faults_gpu.py.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from faultkit import (
    call_until_done,
    cmdline,
    http_server,
    leftovers,
    new_marker,
    prog,
    resource_json,
    server_env,
    start_http_server,
    stop_server,
    text_of,
    wait_no_leftovers,
    working_dir,
)
from mcp import Client, StdioServerParameters
from timeout_report import record_wait

pytestmark = pytest.mark.anyio

RUN_TIMEOUT_S = 30  # the run stage's limit in the module's server: an honest run takes 4-10 s on 2 loaded cores
REF = prog("ref_relu")

FAULT_EXT = r'''
#include <torch/extension.h>
#include <cstdio>
#include <new>
#include <vector>

torch::Tensor fault_relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}

torch::Tensor segv(torch::Tensor x) {        // a host-side null-pointer write
    volatile int* p = nullptr;
    *p = 1;
    return x;
}

torch::Tensor spin(torch::Tensor x) {        // a loop that never ends (and never releases the GIL)
    volatile unsigned long n = 0;
    while (true) { n = n + 1; }
    return x;
}

torch::Tensor hog(torch::Tensor x) {         // takes address space until the allocator says no
    std::vector<char*> blocks;
    while (true) { blocks.push_back(new char[1UL << 30]); }
    return x;
}

torch::Tensor chatter(torch::Tensor x, int64_t mb) {   // megabytes on stdout, once per process
    static bool said = false;
    if (!said) {
        said = true;
        std::vector<char> line(1023, 'z');
        line.push_back('\n');
        for (int64_t i = 0; i < mb * 1024; ++i) fwrite(line.data(), 1, line.size(), stdout);
        fflush(stdout);
    }
    return fault_relu(x);
}
'''


def cpp_candidate(call: str) -> str:
    """A candidate whose forward calls one function of the shared fault extension."""
    return f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="stitch_faults", cpp_sources={FAULT_EXT!r},
                  functions=["fault_relu", "segv", "spin", "hog", "chatter"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.{call}
'''


SPAWNER = '''import subprocess
import sys
import threading
import time

import torch
import torch.nn as nn


def _spin():
    while True:
        time.sleep(0.01)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kids = []

    def forward(self, x):
        if not self.kids:
            threading.Thread(target=_spin, name="hidden-work", daemon=True).start()
            sleeper = [sys.executable, "-c", "import time; time.sleep(3600)"]
            self.kids = [subprocess.Popen(sleeper),                           # in the worker's group
                         subprocess.Popen(sleeper, start_new_session=True)]   # one that left it
        return torch.relu(x)
'''


def honest(tag: str) -> str:
    """A fresh honest candidate (a new candidate id, so a new check rather than a rejoined job)."""
    return Path(prog("cand_relu_torch")).read_text() + f"\n# {tag}\n"


@pytest.fixture(scope="module")
def server(run_dir):
    marker = new_marker()
    data = run_dir / "faults" / "data"
    env = server_env(marker, data, STITCH_RUN_TIMEOUT_S=RUN_TIMEOUT_S)
    with http_server(marker, data, env=env) as srv:
        yield srv
    assert not wait_no_leftovers(marker), "processes left after the server stopped"


async def check(url: str, candidate: str, **kw) -> dict:
    async with Client(url) as c:
        return await call_until_done(c, "compile_and_check", {
            "candidate": candidate, "reference": REF, "timing": False, "compare_compile": False, **kw},
            stage_limits={"run": RUN_TIMEOUT_S})


async def assert_survived(srv, report: dict, tag: str) -> None:
    """The three guarantees after a fault."""
    left = wait_no_leftovers(srv.marker, {srv.pid})
    assert not left, f"left running after {tag}: {left}"
    assert srv.alive(), srv.stderr_tail()
    async with Client(srv.url) as c:
        cand = await resource_json(c, f"stitch://candidates/{report['candidate_id']}")
        checks = [r["body"] for r in cand["reports"] if r["kind"] == "check"]
        assert checks and checks[-1]["verdict"] == report["verdict"]
        assert checks[-1]["error_kind"] == report["error_kind"] and checks[-1]["reasons"] == report["reasons"]
        history = await resource_json(c, f"stitch://tasks/{report['task_id']}/history")
        assert report["candidate_id"] in {row["candidate_id"] for row in history["candidates"]}
        again = await call_until_done(c, "compile_and_check", {
            "candidate": honest(f"after {tag}"), "reference": REF, "timing": False, "compare_compile": False},
            stage_limits={"run": RUN_TIMEOUT_S})
    assert again["verdict"] == "pass", again["summary"]
    assert not wait_no_leftovers(srv.marker, {srv.pid})


@pytest.mark.timeout(120)  # a C++ build: 15 s alone, 22 s beside another test on 2 cores
async def test_segfault_in_cpp_extension(server):
    r = await check(server.url, cpp_candidate("segv(x)"))
    assert r["verdict"] == "error" and r["error_kind"] == "segfault", r["summary"]
    assert "segmentation fault" in r["reasons"][0]
    assert r["build"]["extensions"] and r["build"]["extensions"][0]["name"] == "stitch_faults"
    await assert_survived(server, r, "segfault")


@pytest.mark.slow
async def test_endless_cpp_loop_hits_the_run_timeout(server):
    t0 = time.monotonic()
    r = await check(server.url, cpp_candidate("spin(x)"))
    took = time.monotonic() - t0
    assert r["verdict"] == "error" and r["error_kind"] == "timeout", r["summary"]
    assert f"timed out after {RUN_TIMEOUT_S} s" in r["reasons"][0]
    assert took < RUN_TIMEOUT_S + 60, took
    await assert_survived(server, r, "endless loop")


@pytest.mark.timeout(120)  # 18 s alone, 22 s beside another test on 2 cores
async def test_host_memory_exhaustion(server):
    r = await check(server.url, cpp_candidate("hog(x)"))
    assert r["verdict"] == "error" and r["error_kind"] == "host_oom", r["summary"]
    assert "out of memory" in r["reasons"][0]
    await assert_survived(server, r, "host oom")


async def test_megabytes_on_stdout_are_captured_not_fatal(server):
    """8 MB of output from C++ (under the flood limit): the check still passes, the output is trimmed."""
    r = await check(server.url, cpp_candidate("chatter(x, 8)"))
    assert r["verdict"] == "pass", r["summary"]
    assert r["output"].startswith("zzzz") and len(r["output"]) <= 4100  # head and tail of 8 MB
    await assert_survived(server, r, "chatter")


async def test_os_exit_in_forward(server):
    r = await check(server.url, prog("cand_exit"))
    assert r["verdict"] == "error" and r["error_kind"] == "os_exit", r["summary"]
    assert "without reporting a result" in r["reasons"][0]
    await assert_survived(server, r, "os._exit")


async def test_threads_and_processes_are_caught_and_cleaned_up(server):
    r = await check(server.url, SPAWNER)
    assert r["verdict"] == "fail", r["summary"]
    codes = {f["code"] for f in r["integrity"]["findings"] if f["severity"] == "error"}
    assert "background_processes" in codes, r["integrity"]["findings"]
    await assert_survived(server, r, "threads and processes")


async def test_endless_output_over_stdio_keeps_the_protocol_clean(run_dir):
    """The flood goes to the worker's captured pipe, never to the server's stdout (the protocol)."""
    marker = new_marker()
    data = run_dir / "faults-stdio" / "data"
    params = StdioServerParameters(command=sys.executable, args=["-m", "stitch_mcp", "serve"],
                                   env=server_env(marker, data))
    async with Client(params) as c:
        r = await call_until_done(c, "compile_and_check", {
            "candidate": prog("cand_flood"), "reference": REF, "timing": False, "compare_compile": False})
        assert r["verdict"] == "error" and r["error_kind"] == "output_flood", r["summary"]
        assert "flooded" in r["reasons"][0] and len(r["output"]) <= 4100
        assert not wait_no_leftovers(marker)
        cand = await resource_json(c, f"stitch://candidates/{r['candidate_id']}")
        assert cand["reports"][-1]["body"]["error_kind"] == "output_flood"
        again = await call_until_done(c, "compile_and_check", {
            "candidate": honest("after flood"), "reference": REF, "timing": False, "compare_compile": False})
        assert again["verdict"] == "pass", again["summary"]
    assert not wait_no_leftovers(marker)


def _db_ok(data: Path) -> None:
    db = sqlite3.connect(f"file:{data / 'workspace.sqlite3'}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()


@pytest.mark.timeout(120)  # two servers: 17 s alone, 23 s beside another test on 2 cores
async def test_server_killed_mid_check_then_restarted(tmp_path):
    marker = new_marker()
    data = tmp_path / "data"
    env = server_env(marker, data, STITCH_RUN_TIMEOUT_S=600)  # only the server's death can stop the hang
    first = start_http_server(marker, data, env=env)
    try:
        async with Client(first.url) as c:
            done = await call_until_done(c, "compile_and_check", {
                "candidate": honest("before the kill"), "reference": REF, "timing": False, "compare_compile": False},
                stage_limits={"run": 600})
            assert done["verdict"] == "pass", done["summary"]
            res = await c.call_tool("compile_and_check", {"candidate": prog("cand_hang"), "task_id": done["task_id"],
                                                          "timing": False, "max_wait_s": 1})
            assert not res.is_error, text_of(res)
            running = res.structured_content
            assert running["status"] == "running" and running["job_id"]
        t0 = time.monotonic()
        while not any("stitch_mcp.worker" in cmd and working_dir(pid).endswith("/run")
                      for pid, cmd in leftovers(marker, {first.pid})):
            assert time.monotonic() < t0 + 60, "the run worker never started"
            time.sleep(0.2)
        record_wait("the run worker starts", 60, time.monotonic() - t0)
        time.sleep(2)  # inside the candidate's endless forward by now
        os.kill(first.pid, signal.SIGKILL)
        first.proc.wait(timeout=10)
        left = wait_no_leftovers(marker, timeout=15)
        assert not left, f"the killed server's worker outlived it: {left}"
    finally:
        stop_server(first)
    _db_ok(data)

    second = start_http_server(marker, data, env=env)
    try:
        async with Client(second.url) as c:
            js = await c.call_tool("job_status", {"job_id": running["job_id"], "max_wait_s": 1})
            assert not js.is_error, text_of(js)
            info = js.structured_content
            assert info["status"] == "interrupted" and info["tool"] == "compile_and_check", info
            assert "submit the call again" in info["error"]
            history = await resource_json(c, f"stitch://tasks/{done['task_id']}/history")
            rows = {row["candidate_id"]: row for row in history["candidates"]}
            assert rows[done["candidate_id"]]["verdict"] == "pass"
            hung = [cid for cid, row in rows.items() if cid != done["candidate_id"]]
            assert len(hung) == 1 and rows[hung[0]]["verdict"] is None  # registered, never judged
            cand = await resource_json(c, f"stitch://candidates/{done['candidate_id']}")
            assert [r["body"]["verdict"] for r in cand["reports"] if r["kind"] == "check"] == ["pass"]
            again = await call_until_done(c, "compile_and_check", {
                "candidate": honest("after the restart"), "task_id": done["task_id"], "timing": False},
                stage_limits={"run": 600})
            assert again["verdict"] == "pass", again["summary"]
        assert second.alive()
        assert not wait_no_leftovers(marker, {second.pid})
    finally:
        stop_server(second)
    _db_ok(data)
    assert not wait_no_leftovers(marker)


def test_marker_scan_sees_this_machine():
    """Guard against a scan that silently finds nothing: it must see a marked process of our own."""
    import subprocess

    marker = new_marker()
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                         env={**os.environ, "STITCH_TEST_MARKER": marker})
    try:
        t0 = time.monotonic()
        while not leftovers(marker) and time.monotonic() < t0 + 5:
            time.sleep(0.05)
        record_wait("the scan sees the sleeper", 5, time.monotonic() - t0)
        assert [pid for pid, _ in leftovers(marker)] == [p.pid], cmdline(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not leftovers(marker)
