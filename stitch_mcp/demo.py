"""`stitch-mcp demo`: start the server over stdio and drive it through a real MCP client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio


def server_params(extra_env: dict[str, str] | None = None):
    """How to spawn this package's server over stdio (the same command the README's configs use)."""
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("STITCH_", "CUDA", "XDG_", "PATH", "HOME",
                                                                 "LD_LIBRARY_PATH", "PYTHONPATH", "TORCH"))}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env.update(extra_env or {})
    return StdioServerParameters(command=sys.executable, args=["-m", "stitch_mcp", "serve"], env=env)


async def _demo(out: Path) -> int:
    from mcp import Client
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=False)
    async with Client(server_params()) as client:
        tools = await client.list_tools()
        prompts = await client.list_prompts()
    table = Table(title="stitch-mcp tools (listed over stdio by an MCP client)")
    table.add_column("tool")
    table.add_column("what it does")
    for tool in tools.tools:
        table.add_row(tool.name, (tool.description or "").split("\n")[0])
    console.print(table)
    console.print("prompts: " + ", ".join(p.name for p in prompts.prompts))
    console.print(f"reports folder: {out}")
    return 0


def run_demo(out: str | None) -> int:
    from stitch_mcp.config import get_settings

    folder = Path(out) if out else get_settings().data_dir / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    return anyio.run(_demo, folder)
