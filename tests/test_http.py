"""Streamable HTTP: loopback by default, a token required off loopback, 401 without it, DNS-rebinding
protection on. Real server processes on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from timeout_report import record_wait

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(*args: str, env_extra: dict[str, str] | None = None):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    proc = subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve", "--http", "--port", str(port), *args],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        while time.monotonic() < t0 + 30:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                record_wait("http server start", 30, time.monotonic() - t0)
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_token_required_and_checked():
    with http_server("--token", "s3cret") as url:
        assert httpx.post(url, json=INIT, headers=HEADERS).status_code == 401
        wrong = {**HEADERS, "Authorization": "Bearer nope"}
        assert httpx.post(url, json=INIT, headers=wrong).status_code == 401
        import httpx2

        async with httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                names = {t.name for t in (await client.list_tools()).tools}
        assert "compile_and_check" in names


async def test_loopback_without_token_serves_and_rejects_rebinding():
    with http_server() as url:
        async with Client(url) as client:
            assert "job_status" in {t.name for t in (await client.list_tools()).tools}
        rebinding = {**HEADERS, "Host": "attacker.example"}
        assert httpx.post(url, json=INIT, headers=rebinding).status_code in (403, 421)


def test_non_loopback_bind_needs_a_token():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("STITCH_AUTH_TOKEN", None)
    out = subprocess.run([sys.executable, "-m", "stitch_mcp", "serve", "--http", "--host", "0.0.0.0",
                          "--port", str(_free_port())], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "without an auth token" in out.stderr


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_client_roots_over_http(tmp_path, mode):
    """The client's roots are asked on the call's own stream (a legacy HTTP client need not open the
    standalone stream), and they become the allowed folders."""
    from mcp.types import ListRootsResult, Root

    offered = Path(tempfile.mkdtemp(dir=ROOT / "tests", prefix="http-roots-"))
    (offered / "prog.py").write_text("import torch\n\nx = 1\n")

    async def list_roots(context):
        return ListRootsResult(roots=[Root(uri=offered.as_uri())])

    try:
        with http_server(env_extra={"STITCH_ALLOWED_ROOTS": ""}) as url:
            async with Client(url, list_roots_callback=list_roots, mode=mode) as client:
                with anyio.fail_after(60):
                    inside = await client.call_tool("profile_reference", {"reference": str(offered / "prog.py")})
                    outside = await client.call_tool("profile_reference",
                                                     {"reference": str(ROOT / "tests" / "programs" / "ref_relu.py")})
        assert "does not define" in inside.content[0].text
        assert "not a file inside the allowed folders" in outside.content[0].text
    finally:
        (offered / "prog.py").unlink()
        offered.rmdir()
