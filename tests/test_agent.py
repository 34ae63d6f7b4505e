"""tools/agent.py against a scripted OpenAI-compatible endpoint on loopback: the remote 'model'
profiles the reference, checks a candidate, then answers; the server is real, over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from stitch_mcp import examples

ROOT = Path(__file__).resolve().parent.parent


class ScriptedModel(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions with a fixed script, reading ids from earlier tool results."""

    requests: list[dict] = []
    candidate_path = ""
    reference_path = ""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ScriptedModel.requests.append(body)
        tool_results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        if not tool_results:
            message = self._call("profile_reference", {"reference": self.reference_path})
        elif len(tool_results) == 1:
            task_id = tool_results[0]["result"]["task_id"]
            message = self._call("compile_and_check", {"task_id": task_id, "candidate": self.candidate_path,
                                                       "timing": False})
        else:
            verdict = tool_results[-1]["result"]["verdict"]
            message = {"role": "assistant", "content": f"finished: verdict {verdict}"}
        data = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _call(name: str, args: dict) -> dict:
        n = len(ScriptedModel.requests)
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


@pytest.mark.slow
def test_agent_drives_the_loop_through_a_chat_endpoint(tmp_path):
    for name in ("reference.py", "cpu_fused.py"):
        (tmp_path / name).write_text(examples.read(name))
    ScriptedModel.reference_path = str(tmp_path / "reference.py")
    ScriptedModel.candidate_path = str(tmp_path / "cpu_fused.py")
    ScriptedModel.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        out = subprocess.run([sys.executable, str(ROOT / "tools" / "agent.py"), ScriptedModel.reference_path,
                              "--url", url, "--model", "scripted", "--turns", "5"],
                             capture_output=True, text=True, timeout=600,
                             env={**__import__("os").environ, "STITCH_ALLOWED_ROOTS": str(tmp_path)})
    finally:
        server.shutdown()
    assert out.returncode == 0, out.stderr[-3000:]
    assert "finished: verdict pass" in out.stdout
    first = ScriptedModel.requests[0]
    assert {"compile_and_check", "profile_reference", "job_status"} <= {t["function"]["name"] for t in first["tools"]}
    # after profiling, the planner prompt was handed to the model
    assert any("Planner" in (m.get("content") or "") for m in ScriptedModel.requests[1]["messages"])
