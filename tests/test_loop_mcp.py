"""The loop through a real MCP client (in memory): rubric_score, save_plan/save_feedback, prompts,
resources that survive a server restart, and the client judge over MCP sampling."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from stitch_mcp import store as store_mod
from stitch_mcp.config import configure
from stitch_mcp.server import create_server

pytestmark = pytest.mark.anyio

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent
REF = str(CASES / "relu_reference.py")


@pytest.fixture
def data_dir(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    yield tmp_path / "data"
    configure()


def _restart(data_dir: Path) -> None:
    """What a new server process sees: the workspace reopened from disk."""
    path = (data_dir / "workspace.sqlite3").expanduser()
    ws = store_mod._workspaces.pop(path, None)
    if ws is not None:
        ws.close()


def _text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _resource(client, uri: str) -> dict:
    res = await client.read_resource(uri)
    return json.loads(res.contents[0].text)


async def test_workspace_survives_a_restart(data_dir):
    async with Client(create_server()) as c:
        r = await c.call_tool("rubric_score", {"candidate": str(CASES / "relu_fallback.py"), "reference": REF})
        assert not r.is_error, _text(r)
        hack = r.structured_content
        assert hack["verdict"] == "hack" and hack["route"]["decision"] == "fix"
        task_id, hack_id = hack["task_id"], hack["candidate_id"]
        plan = await c.call_tool("save_plan", {"task_id": task_id, "plan": "### Target ops\nrelu (100%)\n"})
        assert not plan.is_error and "plan stored" in _text(plan)
        fb = await c.call_tool("save_feedback", {"candidate_id": hack_id,
                                                 "items": ["[no_fallback] Remove the torch::relu call; write the kernel"]})
        assert not fb.is_error
        naive = await c.call_tool("rubric_score", {"candidate": str(CASES / "relu_naive.py"), "task_id": task_id})
        naive_id = naive.structured_content["candidate_id"]
        assert naive.structured_content["dimensions"]["skill_compliance"]["score"] == 1.0
    _restart(data_dir)
    async with Client(create_server()) as c:
        task = await _resource(c, f"stitch://tasks/{task_id}")
        assert task["plan"].startswith("### Target ops") and task["candidates"] == [hack_id, naive_id]
        hist = await _resource(c, f"stitch://tasks/{task_id}/history")
        rows = {row["candidate_id"]: row for row in hist["candidates"]}
        assert rows[hack_id]["rubric_verdict"] == "hack" and rows[hack_id]["routes"][-1]["decision"] == "fix"
        assert rows[hack_id]["saved_feedback"] == ["[no_fallback] Remove the torch::relu call; write the kernel"]
        assert rows[naive_id]["parent_id"] == hack_id
        cand = await _resource(c, f"stitch://candidates/{naive_id}")
        assert "relu_kernel" in cand["source"] and any(rep["kind"] == "rubric" for rep in cand["reports"])
        planner = await c.get_prompt("planner", {"task_id": task_id})
        text = planner.messages[0].content.text
        assert "### Fusion groups" in text and "torch.relu(x)" in text and "save_plan" in text
        assert "static estimate" in text  # no profile_reference stored
        verifier = await c.get_prompt("verifier", {"candidate_id": naive_id})
        vtext = verifier.messages[0].content.text
        assert "### Feedback items" in vtext and "[no_fallback] Remove the torch::relu call" in vtext
        assert "rubric CLEAN" in vtext and hack_id in vtext
        with pytest.raises(Exception):
            await c.read_resource(f"stitch://tasks/{task_id}/best")


async def test_unknown_ids_are_tool_errors(data_dir):
    async with Client(create_server()) as c:
        r = await c.call_tool("rubric_score", {"candidate_id": "c-000000000000"})
        assert r.is_error and "unknown candidate" in _text(r)
        r = await c.call_tool("save_plan", {"task_id": "t-000000000000", "plan": "x"})
        assert r.is_error and "unknown task" in _text(r)
        r = await c.call_tool("save_feedback", {"candidate_id": "c-000000000000", "items": ["x"]})
        assert r.is_error and "unknown candidate" in _text(r)


async def test_client_judge_without_sampling_says_so(data_dir):
    async with Client(create_server()) as c:
        r = await c.call_tool("rubric_score", {"candidate": str(CASES / "relu_naive.py"), "reference": REF,
                                               "judge": "client"})
        assert not r.is_error, _text(r)
        assert r.structured_content["judge"].startswith("client judge unavailable")
        assert "sampling" in r.structured_content["judge"]


async def test_client_judge_with_sampling_merges_and_keeps_a_hack(data_dir):
    asked = []

    async def sampler(context, params):
        asked.append(params.messages[0].content.text)
        answer = {"anti_hacking": {"score": 1.0, "verdict": "clean", "reasons": ["fine"]},
                  "cuda_engineering": {"score": 0.5, "reasons": ["scalar loads"]},
                  "operator_coverage": {"score": 1.0}, "skill_compliance": {"score": 1.0}}
        return CreateMessageResult(role="assistant", model="fake",
                                   content=TextContent(type="text", text=json.dumps(answer)))

    async with Client(create_server(), sampling_callback=sampler) as c:
        r = await c.call_tool("rubric_score", {"candidate": str(CASES / "relu_fallback.py"), "reference": REF,
                                               "judge": "client"})
        assert not r.is_error, _text(r)
        out = r.structured_content
        assert asked and "torch::relu" in asked[0]
        assert out["judge"].startswith("client (merged") and out["verdict"] == "hack" and out["overall"] == 0.0
        r = await c.call_tool("rubric_score", {"candidate": str(CASES / "relu_naive.py"), "reference": REF,
                                               "judge": "client"})
        out = r.structured_content
        assert out["verdict"] == "clean" and out["judge"].startswith("client (merged")
        assert any(f["code"] == "client_judge" for f in out["dimensions"]["cuda_engineering"]["findings"])


async def test_a_job_reads_each_program_once_and_works_on_what_it_read(data_dir, monkeypatch, tmp_path):
    """The job is keyed on what the files held when the call came; it then works on that text, never
    on a second read: a file edited meanwhile cannot make the verdict belong to other code."""
    from stitch_mcp import sources

    cand = tmp_path / "cand.py"
    cand.write_text((CASES / "relu_fallback.py").read_text())
    reads: list[str] = []
    read_path = sources._read_path

    def read_then_edit(value, field, limit):
        reads.append(field)
        program = read_path(value, field, limit)
        if field == "candidate":  # the user saves another version right after the call
            cand.write_text((CASES / "relu_naive.py").read_text())
        return program

    monkeypatch.setattr(sources, "_read_path", read_then_edit)
    async with Client(create_server()) as c:
        r = await c.call_tool("rubric_score", {"candidate": str(cand), "reference": REF})
    assert not r.is_error, _text(r)
    assert sorted(reads) == ["candidate", "reference"]
    assert r.structured_content["verdict"] == "hack"  # relu_fallback's, the text the call was keyed on
