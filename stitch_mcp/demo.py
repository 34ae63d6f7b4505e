"""`stitch-mcp demo`: the whole loop on a bundled task, through a real MCP client over stdio.

It starts `stitch-mcp serve` as a subprocess and plays the Coder: profile the reference, read the
planner prompt, check a first (naive) candidate, profile its kernels, score it, search the docs
for the suggested fix, check an improved candidate, score it, and read the verifier's routing.
With a GPU the candidates are CUDA; without one they are C++ (the CPU path), and the steps that
need a GPU are named as skipped. Reports (JSON) and images go to the folder it prints.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from stitch_mcp import examples


def server_params(extra_env: dict[str, str] | None = None):
    """How to spawn this package's server over stdio (the same command the README's configs use)."""
    from mcp import StdioServerParameters

    keep = ("STITCH_", "CUDA", "XDG_", "PATH", "HOME", "LD_LIBRARY_PATH", "PYTHONPATH", "TORCH", "CXX", "CC",
            "NVIDIA", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k.startswith(keep)}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env.update(extra_env or {})
    return StdioServerParameters(command=sys.executable, args=["-m", "stitch_mcp", "serve"], env=env)


def _has_gpu() -> bool:
    from stitch_mcp.devices import discover

    return bool(discover())


class Demo:
    def __init__(self, client, console, out: Path):
        self.client, self.console, self.out = client, console, out
        self.rows: list[dict[str, Any]] = []

    async def call(self, tool: str, args: dict[str, Any], label: str) -> dict[str, Any] | None:
        """Call a tool, following job_status while it runs; save its JSON and images."""
        with self.console.status(f"{label} ..."):
            result = await self.client.call_tool(tool, {**args, "max_wait_s": 30})
            while not result.is_error and (result.structured_content or {}).get("status") == "running":
                job = result.structured_content["job_id"]
                result = await self.client.call_tool("job_status", {"job_id": job, "max_wait_s": 30})
                if not result.is_error and result.structured_content.get("status") == "done":
                    body = result.structured_content.get("result") or {}
                    result.structured_content = body
        text = " ".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        if result.is_error:
            self.console.print(f"[red]{label}: {text}")
            return None
        body = result.structured_content or {}
        stem = label.lower().replace(" ", "_").replace("(", "").replace(")", "")
        (self.out / f"{stem}.json").write_text(json.dumps(body, indent=1))
        for i, block in enumerate(c for c in result.content if getattr(c, "type", "") == "image"):
            (self.out / f"{stem}_{i}.png").write_bytes(base64.b64decode(block.data))
        self.console.rule(label)
        self.console.print(body.get("summary") or text, markup=False, highlight=False)
        return body

    async def prompt(self, name: str, args: dict[str, str]) -> str:
        prompt = await self.client.get_prompt(name, args)
        text = prompt.messages[0].content.text
        (self.out / f"prompt_{name}.md").write_text(text)
        return text


async def _run(out: Path, gpu: bool) -> int:
    from mcp import Client
    from rich.console import Console
    from rich.table import Table

    console = Console()
    flavour = "cuda" if gpu else "cpu"
    files = {"reference": "reference.py", "naive": f"{flavour}_naive.py", "improved": f"{flavour}_fused.py"}
    for name in files.values():
        (out / name).write_text(examples.read(name))
    console.print(f"stitch-mcp demo on the {'GPU' if gpu else 'CPU'} path; reports go to {out}")
    if not gpu:
        console.print("[yellow]No GPU here: candidates are C++ on the CPU, timings use host clocks, "
                      "and profile_kernel (Nsight Compute) is skipped.")
    env = {"STITCH_ALLOWED_ROOTS": os.pathsep.join([str(out), os.environ.get("STITCH_ALLOWED_ROOTS", "")]),
           # the server's stderr comes through to this console: keep its progress lines out of the report
           "STITCH_LOG_LEVEL": os.environ.get("STITCH_LOG_LEVEL", "WARNING")}
    async with Client(server_params(env)) as client:
        demo = Demo(client, console, out)
        tools = {t.name for t in (await client.list_tools()).tools}
        console.print(f"server tools: {', '.join(sorted(tools))}")
        ref = str(out / files["reference"])
        profile = await demo.call("profile_reference", {"reference": ref}, "Profile of the reference")
        if profile is None:
            return 1
        task_id = profile["task_id"]
        plan = await demo.prompt("planner", {"task_id": task_id})
        console.rule("Planner prompt (first lines)")
        console.print("\n".join(plan.splitlines()[:8]), markup=False)
        feedback: list[str] = []
        for step, key in enumerate(("naive", "improved"), 1):
            args = {"task_id": task_id, "candidate": str(out / files[key])}
            check = await demo.call("compile_and_check", args, f"Check candidate {step} ({key})")
            if check is None:
                return 1
            cid = check["candidate_id"]
            kernel = None
            if gpu:
                kernel = await demo.call("profile_kernel", {"task_id": task_id, "candidate_id": cid},
                                         f"Kernel profile {step} ({key})")
            rubric_args: dict[str, Any] = {"task_id": task_id, "candidate_id": cid}
            if feedback:
                rubric_args["feedback"] = feedback
            rubric = await demo.call("rubric_score", rubric_args, f"Rubric {step} ({key})")
            route = (check.get("route") or (rubric or {}).get("route") or {})
            feedback = list(route.get("feedback") or [])
            if step == 1:
                query = _doc_query(kernel, feedback)
                await demo.call("search_cuda_docs", {"query": query, "k": 3}, "Docs search")
            demo.rows.append({"candidate": key, "verdict": check.get("verdict"),
                              "eager": check.get("speedup_vs_eager"), "compile": check.get("speedup_vs_compile"),
                              "rubric": (rubric or {}).get("verdict"), "overall": (rubric or {}).get("overall"),
                              "route": route.get("decision")})
        verifier = await demo.prompt("verifier", {"candidate_id": cid})
        console.rule("Verifier prompt (first lines)")
        console.print("\n".join(verifier.splitlines()[:8]), markup=False)
    table = Table(title=f"stitch-mcp demo: task {task_id} ({'GPU' if gpu else 'CPU'} path)")
    for col in ("candidate", "verdict", "x eager", "x compile", "rubric", "overall", "route"):
        table.add_column(col)
    for row in demo.rows:
        fmt = lambda v: "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
        table.add_row(row["candidate"], fmt(row["verdict"]), fmt(row["eager"]), fmt(row["compile"]),
                      fmt(row["rubric"]), fmt(row["overall"]), fmt(row["route"]))
    console.print(table)
    console.print(_story(demo.rows, gpu))
    console.print(f"JSON reports, prompts and images: {out}")
    return 0 if all(r["verdict"] == "pass" for r in demo.rows) else 1


def _story(rows: list[dict[str, Any]], gpu: bool) -> str:
    """One sentence on what the loop achieved: the improved candidate against the naive one."""
    if len(rows) < 2 or any(r["verdict"] != "pass" for r in rows):
        return "Not every candidate passed: read the reports above for why."
    naive, improved = rows[0], rows[1]
    speed = (f"{improved['eager']:.2f}x eager (the naive one: {naive['eager']:.2f}x)"
             if improved["eager"] and naive["eager"] else "faster than the naive one")
    how = ("one fused, vectorized pass over memory" if gpu else
           "one fused pass over memory, split across cores and vectorised")
    return (f"The Verifier's feedback on the naive candidate led to {how}: {speed}, "
            f"rubric {improved['overall'] or 0:.2f} against {naive['overall'] or 0:.2f}.")


def _doc_query(kernel: dict | None, feedback: list[str]) -> str:
    """What to ask search_cuda_docs: profile_kernel's own query, else the technique the first feedback
    item names (its [tag] in words), never the item's whole text."""
    from stitch_mcp.analysis import TECHNIQUE_LABELS

    for k in (kernel or {}).get("kernels", []):
        for s in k.get("suggestions", []):
            if s.get("doc_query"):
                return s["doc_query"]
    for item in feedback:
        tag = item[1:item.index("]")] if item.startswith("[") and "]" in item else ""
        if tag in TECHNIQUE_LABELS:
            return TECHNIQUE_LABELS[tag]
    return "fuse elementwise operations into one kernel with vectorized loads"


def run_demo(out: str | None) -> int:
    from stitch_mcp.config import get_settings

    folder = (Path(out) if out else get_settings().data_dir / "demo").expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return anyio.run(_run, folder, _has_gpu())
