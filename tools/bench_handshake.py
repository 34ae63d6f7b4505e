"""Median time from spawning `stitch-mcp serve` to a completed tools/list over stdio.

    python tools/bench_handshake.py [--runs 10]

Target: <= 1.0 s on a 2-core machine. Prints one line per run and the median.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent


async def one_handshake() -> float:
    env = {k: v for k, v in os.environ.items() if k.startswith(("STITCH_", "PATH", "HOME"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)
    params = StdioServerParameters(command=sys.executable, args=["-m", "stitch_mcp", "serve"], env=env)
    start = time.perf_counter()
    async with Client(params) as client:
        tools = await client.list_tools()
        elapsed = time.perf_counter() - start
    assert len(tools.tools) >= 6
    return elapsed


async def main(runs: int) -> None:
    await one_handshake()  # warm the page cache and .pyc files, as a second start would be
    times = []
    for i in range(runs):
        t = await one_handshake()
        times.append(t)
        print(f"run {i + 1}: {t * 1000:.0f} ms", file=sys.stderr)
    print(f"handshake (spawn -> tools/list) median {statistics.median(times) * 1000:.0f} ms over {runs} runs, "
          f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms; "
          f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python {platform.python_version()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    anyio.run(main, parser.parse_args().runs)
