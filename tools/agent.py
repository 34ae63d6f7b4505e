"""A headless Coder: any OpenAI-compatible chat endpoint drives stitch-mcp over stdio.

    python tools/agent.py REFERENCE.py --url https://host/v1 --key $KEY --model NAME [--turns 20]

The remote model is the Coder; stitch-mcp (spawned here over stdio) is the Verifier. The model
gets the server's tools as function tools and the planner prompt once the task is profiled; each
tool call goes to the server and its summary plus structured result goes back to the model. The
run ends when the model answers without a tool call, or after --turns. The transcript goes to
stderr; the last answer and the task's history go to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stitch_mcp.demo import server_params  # noqa: E402

SYSTEM = """You are the Coder in a Plan -> Code -> Verify loop for CUDA kernels. The tools are the
Verifier. Start with profile_reference on the given reference, plan, then write a candidate that
defines ModelNew with custom CUDA (torch.utils.cpp_extension.load_inline) and check it with
compile_and_check. Use profile_kernel, rubric_score and search_cuda_docs to improve it. Stop when
the Verifier routes 'accept' or you cannot improve further, and say what you achieved."""
RESULT_CHARS = 6000  # what one tool result may take of the model's context


def tool_specs(tools) -> list[dict]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.input_schema}} for t in tools]


def tool_message(call_id: str, result) -> dict:
    text = " ".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
    body = {"error": text} if result.is_error else {"summary": text, "result": result.structured_content}
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(body)[:RESULT_CHARS]}


async def run_agent(reference: str, url: str, key: str, model: str, turns: int, log=sys.stderr) -> str:
    from mcp import Client

    messages: list[dict] = [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": f"Reference program: {reference}"}]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with Client(server_params()) as mcp, httpx2.AsyncClient(timeout=300, headers=headers) as http:
        tools = tool_specs((await mcp.list_tools()).tools)
        planned = False
        for turn in range(turns):
            resp = await http.post(url.rstrip("/") + "/chat/completions",
                                   json={"model": model, "messages": messages, "tools": tools})
            resp.raise_for_status()
            msg = resp.json()["choices"][0]["message"]
            messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
            calls = msg.get("tool_calls") or []
            if not calls:
                return msg.get("content") or ""
            for call in calls:
                name = call["function"]["name"]
                args = json.loads(call["function"].get("arguments") or "{}")
                print(f"[turn {turn + 1}] {name}({', '.join(args)})", file=log)
                result = await mcp.call_tool(name, args)
                while not result.is_error and (result.structured_content or {}).get("status") == "running":
                    result = await mcp.call_tool("job_status", {"job_id": result.structured_content["job_id"]})
                    if (result.structured_content or {}).get("status") == "done":
                        result.structured_content = result.structured_content.get("result")
                messages.append(tool_message(call["id"], result))
                task_id = (result.structured_content or {}).get("task_id")
                if name == "profile_reference" and task_id and not planned and not result.is_error:
                    plan = await mcp.get_prompt("planner", {"task_id": task_id})
                    messages.append({"role": "user", "content": plan.messages[0].content.text})
                    planned = True
        return f"stopped after {turns} turns"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("--url", required=True, help="base URL of an OpenAI-compatible API (…/v1)")
    parser.add_argument("--key", default="", help="API key (Authorization: Bearer)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    print(anyio.run(run_agent, str(Path(args.reference).resolve()), args.url, args.key, args.model, args.turns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
