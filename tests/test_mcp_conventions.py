"""MCP conventions and server hygiene (issues 14 and 16), through a real client in memory and over
real stdio: titles and truthful annotations, completions, MCP log messages, the client's roots as
the allowed folders, paths read once and only from regular files, malformed and non-Unicode
JSON-RPC lines answered, field-level errors for wrong types."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import ListRootsResult, PromptReference, ResourceTemplateReference, Root
from timeout_report import record_wait

from stitch_mcp.config import configure
from stitch_mcp.server import create_server
from stitch_mcp.store import get_workspace

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
NOT_KERNELBENCH = "import torch\n\nx = 1\n"


def _text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_every_tool_prompt_and_resource_has_a_title_and_truthful_hints():
    async with Client(create_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        prompts = (await client.list_prompts()).prompts
        templates = (await client.list_resource_templates()).resource_templates
        resources = (await client.list_resources()).resources
    for tool in tools.values():
        assert tool.title, tool.name
        hints = tool.annotations
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint,
                            hints.open_world_hint), tool.name
        assert hints.open_world_hint is False, tool.name  # nothing here reaches outside the machine
        assert not any(line.startswith(" ") for line in tool.description.splitlines()), tool.name
    assert {n for n, t in tools.items() if t.annotations.read_only_hint} == {"search_cuda_docs", "job_status"}
    assert {n for n, t in tools.items() if t.annotations.destructive_hint} == {"save_plan"}  # replaces the plan
    assert tools["compile_and_check"].input_schema["required"] == ["candidate"]
    for prompt in prompts:
        assert prompt.title and prompt.arguments
        assert all(a.description and a.required for a in prompt.arguments), prompt.name
    for item in [*templates, *resources]:
        assert item.title and item.description, item.name
        assert not item.name.endswith("_resource"), item.name
    assert {"task", "candidate", "task_history", "best_candidate", "doc_chunk", "profile_image"} <= {
        t.name for t in templates}


async def test_the_check_results_schema_states_the_judges_own_slack():
    """The output schema tells the Coder how far the judge lets a speedup go beyond what it checked;
    those numbers are the judge's constants, not copies that could drift from them."""
    from stitch_mcp.judge.timing import BATCH_SLACK, CPU_ALONE_SLACK, CPU_BATCH_LOWERS

    async with Client(create_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    defs = tools["compile_and_check"].output_schema["$defs"]
    said = {(model, name): field["description"] for model in ("TimingReport", "BatchTiming")
            for name, field in defs[model]["properties"].items() if "description" in field}
    assert f"at most {1 + CPU_ALONE_SLACK:.3g}x eager alone's" in said["TimingReport", "candidate_alone"]
    assert f"up to {1 + CPU_BATCH_LOWERS:.2g}x what this shows" in said["BatchTiming", "single_credited_ms"]
    assert f"over {BATCH_SLACK:g} times its kernel's time" in said["BatchTiming", "host_bound"]


async def test_wrong_types_get_field_level_messages():
    async with Client(create_server()) as client:
        text = _text(await client.call_tool("search_cuda_docs", {"query": "x", "k": "many", "include_text": "maybe"}))
        assert "k: input should be a valid integer" in text
        assert "include_text: input should be a valid boolean" in text
        assert "pydantic" not in text and "input_value" not in text and "For further information" not in text
        text = _text(await client.call_tool("compile_and_check", {"reference": "x"}))
        assert "candidate: field required" in text


async def test_completions_for_task_and_candidate_ids():
    ws = get_workspace()
    task = ws.add_task((PROGRAMS / "ref_relu.py").read_text(), name="ref_relu")
    cand = ws.add_candidate(task.task_id, (PROGRAMS / "cand_relu_torch.py").read_text())
    async with Client(create_server()) as client:
        done = await client.complete(PromptReference(type="ref/prompt", name="planner"),
                                     {"name": "task_id", "value": task.task_id[:6]})
        assert task.task_id in done.completion.values
        assert all(v.startswith(task.task_id[:6]) for v in done.completion.values)
        done = await client.complete(ResourceTemplateReference(type="ref/resource", uri="stitch://candidates/{candidate_id}"),
                                     {"name": "candidate_id", "value": "c-"})
        assert cand.candidate_id in done.completion.values
        done = await client.complete(PromptReference(type="ref/prompt", name="verifier"),
                                     {"name": "candidate_id", "value": "c-no-such"})
        assert done.completion.values == []


async def test_warnings_reach_the_client_as_log_messages_at_its_level():
    """A job left running by a dead server is reported as a warning: over MCP logging, filtered by
    the level the client set with logging/setLevel (handshake-era protocol, as the Inspector speaks)."""
    received = []

    async def on_log(params):
        received.append(params)

    for level, expect in (("error", False), ("warning", True)):
        get_workspace().job_started(f"j-dead{level}", "compile_and_check")
        server = create_server()  # marks the dead job interrupted and warns
        async with Client(server, mode="legacy", logging_callback=on_log) as client:
            with pytest.warns(Warning):  # the SDK flags the logging capability as deprecated in 2026
                await client.set_logging_level(level)
            await client.call_tool("job_status", {"job_id": f"j-dead{level}", "max_wait_s": 0})
        warned = [m for m in received if "interrupted by the last shutdown" in str(m.data)]
        assert bool(warned) is expect, (level, received)
        received.clear()


async def test_interrupted_job_tells_a_one_shot_client_what_to_do():
    get_workspace().job_started("j-oneshot", "compile_and_check")
    async with Client(create_server()) as client:
        result = await client.call_tool("job_status", {"job_id": "j-oneshot"})
    assert result.structured_content["status"] == "interrupted"
    assert "max_wait_s" in result.structured_content["summary"]


@pytest.fixture
def folders(tmp_path):
    """Two folders, a reference-like file in each, and allowed_roots unset (restored after)."""
    offered, other = tmp_path / "offered", tmp_path / "other"
    for folder in (offered, other):
        folder.mkdir()
        (folder / "prog.py").write_text(NOT_KERNELBENCH)
    configure(allowed_roots="")
    yield offered, other
    configure()


def _roots_callback(folder: Path):
    async def list_roots(context):
        return ListRootsResult(roots=[Root(uri=folder.as_uri(), name="project")])
    return list_roots


async def _reference_error(client, path: Path) -> str:
    return _text(await client.call_tool("profile_reference", {"reference": str(path), "max_wait_s": 0}))


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026 protocol (input-required) and handshake era
async def test_client_roots_are_the_allowed_folders(folders, mode):
    offered, other = folders
    async with Client(create_server(), list_roots_callback=_roots_callback(offered), mode=mode) as client:
        # read (then refused as not a KernelBench program): the file was inside the offered root
        assert "does not define" in await _reference_error(client, offered / "prog.py")
        outside = await _reference_error(client, other / "prog.py")
        missing = await _reference_error(client, other / "missing.py")
    assert "not a file inside the allowed folders" in outside and str(offered) in outside
    # outside the roots, a missing file and an existing one get the same answer
    assert outside.replace("prog.py", "X") == missing.replace("missing.py", "X")


async def test_a_client_failing_roots_list_keeps_the_default_folders(folders):
    from mcp.types import ErrorData

    offered, _ = folders

    async def refuse(context):
        return ErrorData(code=-32603, message="no roots today")

    async with Client(create_server(), list_roots_callback=refuse, mode="legacy") as client:
        text = await _reference_error(client, offered / "prog.py")
    assert "not a file inside the allowed folders" in text and str(ROOT) in text  # the working directory


async def test_the_setting_wins_over_the_clients_roots(folders):
    offered, other = folders
    configure(allowed_roots=str(other))
    async with Client(create_server(), list_roots_callback=_roots_callback(offered)) as client:
        assert "not a file inside the allowed folders" in await _reference_error(client, offered / "prog.py")
        assert "does not define" in await _reference_error(client, other / "prog.py")


async def test_a_symlink_out_of_the_root_is_refused(folders):
    offered, other = folders
    (offered / "link.py").symlink_to(other / "prog.py")
    async with Client(create_server(), list_roots_callback=_roots_callback(offered)) as client:
        assert "not a file inside the allowed folders" in await _reference_error(client, offered / "link.py")


async def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "ref.py"
    os.mkfifo(fifo)
    async with Client(create_server()) as client:
        with anyio.fail_after(20):  # before: the read blocked the server forever
            text = await _reference_error(client, fifo)
            assert "not a regular file" in text
            assert (await client.list_tools()).tools


async def test_a_lone_surrogate_in_memory_names_the_field():
    async with Client(create_server()) as client:
        text = _text(await client.call_tool("compile_and_check", {"candidate": "import torch\n\ud800\n",
                                                                  "reference": "x\n"}))
    assert text.count("lone surrogate") == 1 and "candidate:" in text


def _raw_server(cwd: Path = ROOT, env_extra: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def _exchange(proc: subprocess.Popen, lines: list[str], want_ids: set) -> dict:
    """Write raw lines, read answers until every id in want_ids is in; {id: message}."""
    for line in lines:
        proc.stdin.write(line + "\n")
    proc.stdin.flush()
    answers: dict = {}
    while not want_ids <= set(answers):
        line = proc.stdout.readline()
        assert line, f"server closed stdout; stderr: {proc.stderr.read()[-2000:]}"
        message = json.loads(line)
        if "id" in message:
            answers[message["id"]] = message
    return answers


INIT = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "raw", "version": "0"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]


def test_stdio_answers_malformed_and_non_unicode_lines_and_keeps_serving(tmp_path):
    fifo = tmp_path / "cand.py"
    os.mkfifo(fifo)
    call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "compile_and_check", "arguments": {"candidate": str(fifo),
                                                                    "reference": (PROGRAMS / "ref_relu.py").read_text()}}}
    proc = _raw_server()
    try:
        answers = _exchange(proc, INIT + [
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"',  # cut short
            # valid JSON, not Unicode: the escape of a lone surrogate
            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"compile_and_check",'
            '"arguments":{"candidate":"import torch\\n\\ud800\\n","reference":"x\\n"}}}',
            json.dumps(call),
            json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        ], want_ids={1, None, 3, 4, 5})
    finally:
        proc.kill()
        proc.communicate()
    assert answers[None]["error"]["code"] == -32700
    assert answers[3]["result"]["isError"] and "candidate: " in answers[3]["result"]["content"][0]["text"]
    assert "lone surrogate" in answers[3]["result"]["content"][0]["text"]
    assert "not a regular file" in answers[4]["result"]["content"][0]["text"]
    assert answers[5]["result"] == {}


def test_a_server_started_in_a_broad_folder_allows_no_folder():
    """Started from / with no setting and no client roots: no path is readable, and the error says why."""
    env = {k: v for k, v in os.environ.items() if k != "STITCH_ALLOWED_ROOTS"}
    env["PYTHONPATH"] = str(ROOT)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "profile_reference", "arguments": {"reference": str(PROGRAMS / "ref_relu.py")}}}
    proc = subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd="/")
    try:
        answers = _exchange(proc, INIT + [json.dumps(call)], want_ids={1, 2})
    finally:
        proc.kill()
        proc.communicate()
    text = answers[2]["result"]["content"][0]["text"]
    assert "no folder is allowed" in text and "STITCH_ALLOWED_ROOTS" in text


async def test_stdio_client_offers_roots():
    """Over real stdio with a modern-protocol client: the client's roots allow its folder."""
    folder = Path(tempfile.mkdtemp(dir=ROOT / "tests", prefix="roots-"))
    try:
        (folder / "prog.py").write_text(NOT_KERNELBENCH)
        env = {k: v for k, v in os.environ.items() if k.startswith(("STITCH_", "PATH", "HOME"))}
        env.pop("STITCH_ALLOWED_ROOTS", None)
        env["PYTHONPATH"] = str(ROOT)
        params = StdioServerParameters(command=sys.executable, args=["-m", "stitch_mcp", "serve"], env=env,
                                       cwd=str(folder.parent))
        async with Client(params, list_roots_callback=_roots_callback(folder)) as client:
            assert "does not define" in await _reference_error(client, folder / "prog.py")
            assert "not a file inside the allowed folders" in await _reference_error(client, PROGRAMS / "ref_relu.py")
    finally:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


@pytest.mark.slow
async def test_search_while_the_index_builds_answers_running(tmp_path):
    """A cold index takes about a minute to build on 2 cores: a short max_wait_s answers 'running' with a
    job id (before: 'Error executing tool'), and job_status returns the results when it is built."""
    from stitch_mcp import search

    configure(cache_dir=str(tmp_path))
    search.reset()
    try:
        async with Client(create_server()) as client:
            started = time.monotonic()
            first = await client.call_tool("search_cuda_docs", {"query": "cudaMemcpyAsync", "max_wait_s": 0.5})
            assert not first.is_error, _text(first)
            assert first.structured_content["status"] == "running" and first.structured_content["job_id"]
            assert time.monotonic() - started < 10
            done = await client.call_tool("job_status", {"job_id": first.structured_content["job_id"],
                                                         "max_wait_s": 600})
        assert done.structured_content["status"] == "done"
        assert done.structured_content["result"]["results"]
    finally:
        configure()
        search.reset()


async def test_progress_reaches_the_client_as_info_log_messages():
    """Each progress step of a job becomes an MCP log message at level info, when the client asks for
    info (a syntax error ends the check within a second or two: no build, no worker)."""
    received = []

    async def on_log(params):
        received.append(params)

    reference, candidate = (PROGRAMS / "ref_relu.py").read_text(), (PROGRAMS / "cand_syntax.py").read_text()
    async with Client(create_server(), mode="legacy", logging_callback=on_log) as client:
        with pytest.warns(Warning):
            await client.set_logging_level("info")
        t0 = time.monotonic()
        result = await client.call_tool("compile_and_check", {"reference": reference, "candidate": candidate,
                                                              "timing": False, "max_wait_s": 60})
        record_wait("compile_and_check within max_wait_s", 60, time.monotonic() - t0)
        assert result.structured_content["verdict"] == "error"
    steps = [m for m in received if m.level == "info" and str(m.data).startswith("compile_and_check: ")]
    assert steps and steps[0].logger == "stitch_mcp.compile_and_check"
    assert len({str(m.data) for m in steps}) == len(steps), "each step once"


async def test_the_default_wait_is_set_by_the_server():
    """A one-shot client's server (serve --max-wait-s 600) waits for results by default; the schema says so."""
    async with Client(create_server(default_wait_s=600)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("compile_and_check", "profile_reference", "profile_kernel", "rubric_score", "search_cuda_docs",
                 "job_status"):
        assert tools[name].input_schema["properties"]["max_wait_s"]["default"] == 600, name


@pytest.mark.parametrize("value, expected", [
    ("ref\x00.py", "is not a usable path"),
    ("~no-such-user-here/ref.py", "is not a usable path"),
    ("/tmp/" + "x" * 5000 + ".py", "..."),  # a long path is shortened in the answer
])
async def test_unusable_paths_get_a_field_error(value, expected):
    async with Client(create_server()) as client:
        result = await client.call_tool("profile_reference", {"reference": value})
        text = _text(result)
        assert result.is_error and ": reference: " in text and expected in text and len(text) < 1000
        assert (await client.list_tools()).tools


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_client_judge_reads_paths_inside_the_clients_roots(folders, mode):
    """rubric_score's second opinion reads the candidate where the tool does: inside the client's roots."""
    from mcp.types import CreateMessageResult, TextContent

    offered, _ = folders
    (offered / "cand.py").write_text((PROGRAMS / "cand_relu_torch.py").read_text())
    asked = []

    async def sampler(context, params):
        asked.append(params.messages[0].content.text)
        answer = {k: {"score": 1.0} for k in ("anti_hacking", "cuda_engineering", "operator_coverage",
                                                "skill_compliance")}
        return CreateMessageResult(role="assistant", model="fake", content=TextContent(type="text",
                                                                                        text=json.dumps(answer)))

    async with Client(create_server(), list_roots_callback=_roots_callback(offered), sampling_callback=sampler,
                      mode=mode) as client:
        result = await client.call_tool("rubric_score", {"candidate": str(offered / "cand.py"), "judge": "client",
                                                         "reference": (PROGRAMS / "ref_relu.py").read_text()})
    assert not result.is_error, _text(result)
    assert result.structured_content["judge"].startswith("client (merged"), result.structured_content["judge"]
    assert asked and "torch.clamp" in asked[0]


def test_serve_builds_the_docs_index_at_start_and_a_search_meanwhile_answers_running(tmp_path):
    import select

    proc = _raw_server(env_extra={"STITCH_DOCS_INDEX_WARMUP": "1", "STITCH_CACHE_DIR": str(tmp_path),
                                  "STITCH_LOG_LEVEL": "INFO"})
    try:
        seen, t0 = "", time.monotonic()
        while "checking documentation sources" not in seen and time.monotonic() < t0 + 60:
            if select.select([proc.stderr], [], [], 1)[0]:
                seen += proc.stderr.readline()
        record_wait("the docs index build starts", 60, time.monotonic() - t0)
        assert "checking documentation sources" in seen, seen[-2000:]  # the build started by itself
        search = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "search_cuda_docs", "arguments": {"query": "cudaMemcpyAsync", "max_wait_s": 1}}}
        answer = _exchange(proc, INIT + [json.dumps(search)], want_ids={1, 2})[2]["result"]
    finally:
        proc.kill()
        proc.communicate()
    assert not answer.get("isError"), answer
    assert answer["structuredContent"]["status"] == "running" and answer["structuredContent"]["job_id"]
    assert "documentation index" in answer["structuredContent"]["summary"]
