"""The README's client configurations, spawned exactly as written (with the installed console script
in place of /abs/path/to/.venv/bin/stitch-mcp) over stdio, as Claude Desktop, Cursor and VS Code do."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "stitch-mcp"
PLACEHOLDER = "/abs/path/to/.venv/bin/stitch-mcp"


def readme_configs() -> dict[str, dict]:
    """Each JSON block of the README that declares the stitch server, by the client it is for."""
    text = (ROOT / "README.md").read_text()
    configs = {}
    for client, block in re.findall(r"\*\*(Claude Desktop|Cursor|VS Code)\*\*[^\n]*\n\n```json\n(.*?)```", text, re.S):
        data = json.loads(block)
        servers = data.get("mcpServers") or data.get("servers")
        configs[client] = servers["stitch"]
    return configs


def test_readme_has_the_three_configs():
    assert set(readme_configs()) == {"Claude Desktop", "Cursor", "VS Code"}


@pytest.mark.skipif(not SCRIPT.exists(), reason="stitch-mcp is not installed in this environment")
@pytest.mark.parametrize("client_name", ["Claude Desktop", "Cursor", "VS Code"])
async def test_documented_config_starts_the_server(client_name, tmp_path):
    cfg = readme_configs()[client_name]
    assert cfg["command"] == PLACEHOLDER
    env = {k.replace("/abs/path/to/your/kernels", str(tmp_path)): v.replace("/abs/path/to/your/kernels", str(tmp_path))
           for k, v in (cfg.get("env") or {}).items()}
    # clients give the server little of their own environment: only what the config names, plus
    # the SDK's default allow-list (HOME, PATH, ...); our test isolation variables ride along
    env.update({k: v for k, v in os.environ.items() if k.startswith("STITCH_") and k not in env})
    params = StdioServerParameters(command=str(SCRIPT), args=cfg["args"], env=env, cwd=str(tmp_path))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("job_status", {"job_id": "j-none"})
    assert {"compile_and_check", "profile_kernel", "search_cuda_docs"} <= names
    assert result.is_error and "unknown job" in result.content[0].text
