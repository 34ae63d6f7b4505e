"""The Ray executor on a real local Ray cluster (CPU only, declaring 2 GPUs so Ray's GPU scheduling
is real): `stitch-mcp serve --executor ray --ray-address ...` over raw stdio JSON-RPC, a batch of
concurrent checks, each a one-GPU Ray task.

Asserts: every result is stored in the *server's* workspace (the Ray node has a workspace of its
own) and readable through the resources; each report's notes say which Ray node and GPU id ran
it; concurrent tasks were spread over GPU ids 0 and 1; every line on the server's stdout is a
JSON-RPC message. One cluster per module (`ray start --head --block` in its own session, stopped
with SIGTERM); nothing it or the server started is left running. Skipped without Ray.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultkit import ROOT, free_port, new_marker, prog, server_env, wait_no_leftovers
from timeout_report import record_wait

ray = pytest.importorskip("ray")

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # a throwaway loopback cluster


@pytest.fixture(scope="module")
def ray_cluster(run_dir):
    """A head node with 2 CPUs and 2 (declared) GPUs. Yields (address, marker)."""
    marker = new_marker()
    port = free_port()
    temp = Path(f"/tmp/st-ray-{marker[-8:]}")  # short: Ray's socket paths must fit in 107 bytes
    node_data = run_dir / "ray-node" / "data"
    env = {**server_env(marker, node_data), **RAY_ENV}
    ray_bin = Path(sys.executable).with_name("ray")
    log = run_dir / f"ray-{port}.log"
    proc = subprocess.Popen([str(ray_bin), "start", "--head", "--block", "--port", str(port), "--num-cpus", "2",
                             "--num-gpus", "2", "--temp-dir", str(temp), "--include-dashboard=false",
                             "--disable-usage-stats", "--node-ip-address", "127.0.0.1"],
                            env=env, stdin=subprocess.DEVNULL, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        t0 = time.monotonic()
        while "Ray runtime started" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < t0 + 180, "Ray did not start in 180 s"
            time.sleep(0.5)
        record_wait("ray start", 180, time.monotonic() - t0)
        yield f"127.0.0.1:{port}", marker, node_data
    finally:
        proc.send_signal(signal.SIGTERM)  # `ray start --block` stops every process it started
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        left = wait_no_leftovers(marker, timeout=30)
        import shutil

        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes left running: {left}"


class RawStdio:
    """A JSON-RPC client over a server's stdin/stdout that insists every stdout line is JSON-RPC."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.next_id = 1
        self.answers: dict[int, dict] = {}
        self.lines = 0
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ)
        self.buf = b""

    def send(self, method: str, params: dict | None = None, notify: bool = False) -> int | None:
        msg = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        rid = None
        if not notify:
            rid = msg["id"] = self.next_id
            self.next_id += 1
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        return rid

    def _pump(self, timeout: float) -> None:
        for _ in self.sel.select(timeout):
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, f"server closed stdout; exit {self.proc.poll()}"
            self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.lines += 1
            msg = json.loads(line)  # anything but JSON-RPC on stdout would corrupt the protocol
            assert msg.get("jsonrpc") == "2.0", line[:300]
            if "id" in msg and ("result" in msg or "error" in msg):
                self.answers[msg["id"]] = msg

    def wait(self, ids: list[int], timeout: float) -> list[dict]:
        t0 = time.monotonic()
        while not all(i in self.answers for i in ids):
            assert time.monotonic() < t0 + timeout, f"no answer to {[i for i in ids if i not in self.answers]}"
            assert self.proc.poll() is None, f"server exited {self.proc.returncode}"
            self._pump(0.5)
        record_wait(f"answers to {len(ids)} requests", timeout, time.monotonic() - t0)
        return [self.answers[i] for i in ids]


CANDIDATES = [("honest-a", "cand_relu_torch"), ("honest-b", "cand_relu_torch"), ("honest-c", "cand_relu_torch"),
              ("wrong", "cand_wrong")]


@pytest.mark.timeout(240)  # starting Ray is part of it (its own limit: 180 s); 38 s on 2 loaded cores
def test_batch_runs_as_one_gpu_ray_tasks_and_lands_in_the_server_workspace(ray_cluster, run_dir):
    address, _, node_data = ray_cluster
    marker = new_marker()  # the server's own (the cluster's processes carry the fixture's)
    data = run_dir / "ray-server" / "data"
    env = {**server_env(marker, data, STITCH_LOG_LEVEL="INFO"), **RAY_ENV}
    stderr_log = run_dir / "ray-server.stderr"
    proc = subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve", "--executor", "ray",
                             "--ray-address", address], env=env, cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=open(stderr_log, "wb"))
    rpc = RawStdio(proc)
    try:
        init = rpc.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "ray-test", "version": "0"}})
        rpc.wait([init], 60)
        rpc.send("notifications/initialized", notify=True)
        t0 = time.monotonic()
        ids = []
        for tag, name in CANDIDATES:
            source = Path(prog(name)).read_text() + f"\n# {tag}\n"
            ids.append(rpc.send("tools/call", {"name": "compile_and_check", "arguments": {
                "candidate": source, "reference": prog("ref_relu"), "timing": False, "compare_compile": False,
                "max_wait_s": 600}}))
        answers = rpc.wait(ids, 600)
        wall = time.monotonic() - t0
        reports = []
        for (tag, _), answer in zip(CANDIDATES, answers):
            assert "result" in answer, answer
            assert not answer["result"].get("isError"), answer["result"]
            r = answer["result"]["structuredContent"]
            assert r["status"] == "done", r
            assert r["verdict"] == ("fail" if tag == "wrong" else "pass"), r["summary"]
            reports.append(r)

        # each report says where it ran; concurrent tasks got different GPUs
        gpu_ids, nodes = [], set()
        for r in reports:
            note = next((n for n in r["notes"] if n.startswith("ran on Ray node")), None)
            assert note, r["notes"]
            m = re.match(r"ran on Ray node (\w+), GPU ids \['(\d+)'\]", note)
            assert m, note
            nodes.add(m.group(1))
            gpu_ids.append(m.group(2))
        assert set(gpu_ids) == {"0", "1"}, gpu_ids
        assert len(nodes) == 1  # one node in this cluster

        # stored in the server's workspace, readable through the resources
        reads = [rpc.send("resources/read", {"uri": f"stitch://candidates/{r['candidate_id']}"}) for r in reports]
        for r, answer in zip(reports, rpc.wait(reads, 60)):
            body = json.loads(answer["result"]["contents"][0]["text"])
            checks = [rep["body"] for rep in body["reports"] if rep["kind"] == "check"]
            assert len(checks) == 1 and checks[0]["verdict"] == r["verdict"]
            assert any(n.startswith("ran on Ray node") for n in checks[0]["notes"])
        hist = rpc.send("resources/read", {"uri": f"stitch://tasks/{reports[0]['task_id']}/history"})
        rows = json.loads(rpc.wait([hist], 60)[0]["result"]["contents"][0]["text"])["candidates"]
        assert {row["candidate_id"] for row in rows} == {r["candidate_id"] for r in reports}
        assert (data / "workspace.sqlite3").exists() and (node_data / "workspace.sqlite3").exists()
        assert rpc.lines >= 1 + len(CANDIDATES) + len(reports) + 1
        print(f"\nRay batch of {len(CANDIDATES)} checks in {wall:.1f} s; GPU ids {gpu_ids}")
    finally:
        proc.stdin.close()
        try:
            rest = proc.stdout.read()
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rest = b""
    for line in rest.splitlines():  # whatever came after the answers must be protocol too
        assert json.loads(line).get("jsonrpc") == "2.0", line[:300]
    assert proc.returncode == 0, stderr_log.read_text(errors="replace")[-2000:]
    assert not wait_no_leftovers(marker, timeout=20)
