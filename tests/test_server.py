"""The MCP face: every tool, prompt and resource declared with typed schemas, errors that name the
field, and a server that keeps serving after bad input. In memory and over real stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from stitch_mcp.server import create_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"profile_reference", "compile_and_check", "profile_kernel", "rubric_score", "search_cuda_docs",
         "job_status"}
REFERENCE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64)]

def get_init_inputs():
    return []
"""


def _error_text(result) -> str:
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_tools_have_input_and_output_schemas():
    async with Client(create_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert TOOLS <= set(tools)
    for name in TOOLS:
        tool = tools[name]
        assert tool.description, name
        assert tool.input_schema["type"] == "object", name
        assert tool.output_schema and tool.output_schema.get("properties"), name
    check = tools["compile_and_check"]
    assert {"candidate", "reference", "task_id", "max_wait_s"} <= set(check.input_schema["properties"])
    assert {"verdict", "reasons", "task_id", "candidate_id", "speedup_vs_eager",
            "speedup_vs_compile", "status", "job_id"} <= set(check.output_schema["properties"])
    rubric = tools["rubric_score"].output_schema["properties"]
    assert {"verdict", "overall", "dimensions"} <= set(rubric)
    search = tools["search_cuda_docs"].output_schema
    assert "results" in search["properties"]


async def test_prompts_and_resources_are_declared():
    async with Client(create_server()) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
    assert {"planner", "verifier"} <= set(prompts)
    assert [a.name for a in prompts["planner"].arguments] == ["task_id"]
    assert [a.name for a in prompts["verifier"].arguments] == ["candidate_id"]
    assert {"stitch://tasks/{task_id}", "stitch://tasks/{task_id}/history", "stitch://candidates/{candidate_id}",
            "stitch://docs/{doc_id}", "stitch://artifacts/{name}"} <= templates
    assert "stitch://tasks" in resources


@pytest.mark.parametrize("make_value, expected", [
    (lambda tmp: str(tmp / "missing.py"), "reference: no such file"),
    (lambda tmp: str(tmp), "reference: " ),
    (lambda tmp: _write(tmp / "latin1.py", "x = 'caf\xe9'\n".encode("latin-1")), "not UTF-8"),
    (lambda tmp: "x = 1\n" + "#" * 1_100_000, "over the limit"),
    (lambda tmp: "import torch\nclass Model: pass\n", "does not define get_init_inputs, get_inputs"),
    (lambda tmp: "def broken(:\n", "syntax error"),
])
async def test_bad_reference_names_the_field(tmp_path, make_value, expected):
    async with Client(create_server()) as client:
        result = await client.call_tool("profile_reference", {"reference": make_value(tmp_path)})
        assert expected in _error_text(result)
        # the server keeps serving
        assert TOOLS <= {t.name for t in (await client.list_tools()).tools}


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


async def test_directory_is_rejected(tmp_path):
    async with Client(create_server()) as client:
        result = await client.call_tool("compile_and_check", {"reference": str(tmp_path), "candidate": REFERENCE})
    assert "reference:" in _error_text(result) and "directory" in _error_text(result)


async def test_wrong_types_and_unknown_names():
    async with Client(create_server()) as client:
        result = await client.call_tool("search_cuda_docs", {"query": "x", "k": "many"})
        assert "k" in _error_text(result)
        result = await client.call_tool("compile_and_check", {"candidate": REFERENCE, "trials": 0})
        assert "trials" in _error_text(result)
        result = await client.call_tool("job_status", {"job_id": "j-nothere"})
        assert "unknown job" in _error_text(result)
        assert "Unknown tool" in _error_text(await client.call_tool("no_such_tool", {}))
        with pytest.raises(MCPError, match="unknown prompt 'no_such_prompt'; prompts: planner, verifier"):
            await client.get_prompt("no_such_prompt", {})
        with pytest.raises(MCPError, match="unknown task"):
            await client.get_prompt("planner", {"task_id": "t-000000000000"})
        assert TOOLS <= {t.name for t in (await client.list_tools()).tools}


async def test_task_resource_after_registration():
    async with Client(create_server()) as client:
        # compile_and_check registers the task before anything else can fail
        await client.call_tool("compile_and_check", {"reference": REFERENCE, "candidate": REFERENCE, "timing": False,
                                                     "max_wait_s": 0})
        listing = json.loads((await client.read_resource("stitch://tasks")).contents[0].text)
        assert listing, "the task was stored"
        task_id = listing[-1]["task_id"]
        task = json.loads((await client.read_resource(f"stitch://tasks/{task_id}")).contents[0].text)
        assert "def get_inputs" in task["source"]
        prompt = await client.get_prompt("planner", {"task_id": task_id})
        assert "def get_inputs" in prompt.messages[0].content.text


def _stdio_params() -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith(("STITCH_", "PATH", "HOME"))}
    env["PYTHONPATH"] = str(ROOT)
    return StdioServerParameters(command=sys.executable, args=["-m", "stitch_mcp", "serve"], env=env, cwd=str(ROOT))


async def test_stdio_server_lists_and_calls():
    async with Client(_stdio_params()) as client:
        assert TOOLS <= {t.name for t in (await client.list_tools()).tools}
        assert {"planner", "verifier"} <= {p.name for p in (await client.list_prompts()).prompts}
        result = await client.call_tool("profile_reference", {"reference": "/nonexistent/ref.py"})
        assert "not a file inside the allowed folders" in _error_text(result)


def test_python_server_py_and_module_entry_points():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "stitch_mcp", "--help"], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0 and "serve" in out.stdout
    out = subprocess.run([sys.executable, str(ROOT / "server.py"), "--help"], capture_output=True, text=True,
                         env=env, cwd="/", timeout=60)
    assert out.returncode == 0 and "--http" in out.stdout


def test_stdout_carries_only_the_protocol():
    """Raw JSON-RPC over a real process: every stdout line is a protocol message, logs go to stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STITCH_LOG_LEVEL": "DEBUG"}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "profile_reference", "arguments": {"reference": "/nonexistent.py"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        for m in messages:
            proc.stdin.write(json.dumps(m) + "\n")
        proc.stdin.flush()
        ids = set()
        while not {1, 2, 3} <= ids:  # stdin stays open until every answer is in
            line = proc.stdout.readline()
            assert line, f"server closed stdout early; stderr: {proc.stderr.read()[-2000:]}"
            msg = json.loads(line)  # anything else on stdout would corrupt the protocol
            assert msg["jsonrpc"] == "2.0"
            ids.add(msg.get("id"))
        rest, err = proc.communicate(timeout=30)  # closes stdin: the server shuts down
    finally:
        proc.kill()
    assert not rest.strip(), f"stdout after the answers: {rest[:500]}"
    assert err.strip(), "logging goes to stderr"
