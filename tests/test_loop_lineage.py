"""History per session and lineage (issue 16): a candidate's skill compliance and routing see the
feedback and the attempts of its own parent in its own session, never another run's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from stitch_mcp.config import configure
from stitch_mcp.errors import UserError
from stitch_mcp.loop import route_after, save_feedback
from stitch_mcp.models import CheckReport, CorrectnessReport, IntegrityReport, TrialResult
from stitch_mcp.score import rubric_score
from stitch_mcp.server import create_server
from stitch_mcp.store import get_workspace

CASES = Path(__file__).resolve().parent / "rubric_cases"
ROOT = Path(__file__).resolve().parent.parent
RELU_REF = (CASES / "relu_reference.py").read_text()
NAIVE = (CASES / "relu_naive.py").read_text()
IMPROVED = (CASES / "relu_improved.py").read_text()
FALLBACK = (CASES / "relu_fallback.py").read_text()
VEC_ITEM = "[vectorized_access] load float4 per thread - relu_kernel - DRAM 80% - check the kernel's loads"


@pytest.fixture
def ws(tmp_path):
    configure(data_dir=str(tmp_path / "data"), allowed_roots=os.pathsep.join([str(ROOT), str(tmp_path)]))
    yield get_workspace()
    configure()


def passed(eager: float = 1.3) -> CheckReport:
    return CheckReport(verdict="pass", speedup_vs_eager=eager, speedup_vs_compile=eager,
                       correctness=CorrectnessReport(ok=True, trials=[TrialResult(trial=0, seed=0, ok=True)]),
                       integrity=IntegrityReport(ok=True))


def failed() -> CheckReport:
    return CheckReport(verdict="fail", reasons=["trial 0 mismatched"], correctness=CorrectnessReport(
        ok=False, trials=[TrialResult(trial=0, seed=0, ok=False, max_abs_err=0.5)]))


def store_check(ws, cand, report: CheckReport) -> None:
    ws.add_report("check", report, task_id=cand.task_id, candidate_id=cand.candidate_id)


def skill_codes(report) -> list[str]:
    return [f.code for f in report.dimensions.skill_compliance.findings]


def test_a_newcomer_is_not_graded_against_another_sessions_feedback(ws):
    """The demo's run (session A) left feedback on its naive candidate; a newcomer (session B)
    submits the very same files: B's first candidate has no parent and nothing to follow."""
    task = ws.add_task(RELU_REF)
    demo_naive = ws.add_candidate(task.task_id, NAIVE, session="demo")
    save_feedback(demo_naive.candidate_id, [VEC_ITEM, "[grid_stride_loop] a grid-stride loop"], session="demo")
    demo_improved = ws.add_candidate(task.task_id, IMPROVED, session="demo")
    assert demo_improved.parent_id == demo_naive.candidate_id

    mine = rubric_score(candidate=IMPROVED, task_id=task.task_id, session="newcomer")
    assert mine.candidate_id == demo_improved.candidate_id  # same source, same id, its own history
    assert skill_codes(mine) == ["no_feedback"] and mine.dimensions.skill_compliance.score == 1.0
    assert "no parent in this session" in mine.dimensions.skill_compliance.findings[0].message
    # the demo's own view of the same candidate still grades its feedback
    theirs = rubric_score(candidate_id=demo_improved.candidate_id, session="demo")
    assert skill_codes(theirs).count("feedback_done") == 2


def test_routing_sees_only_the_sessions_attempts(ws):
    """Session A failed twice in a row; session B's first failure is a fix, not a replan."""
    task = ws.add_task(RELU_REF)
    for n in range(2):
        c = ws.add_candidate(task.task_id, NAIVE + f"\n# a{n}\n", session="a")
        store_check(ws, c, failed())
        route_after(task.task_id, c.candidate_id, session="a")
    assert ws.routes(task.task_id, "a")[-1][1].decision == "replan"
    b = ws.add_candidate(task.task_id, NAIVE + "\n# b0\n", session="b")
    assert b.parent_id is None
    store_check(ws, b, failed())
    assert route_after(task.task_id, b.candidate_id, session="b").decision == "fix"
    assert [d for _, d in ws.routes(task.task_id, "b")][0].decision == "fix"


def test_a_parallel_check_is_not_a_failed_attempt(ws):
    """Two candidates written from one parent and checked at once: one fails while the other is
    still running (no report yet). The failure is a fix; a second failure along the line replans."""
    task = ws.add_task(RELU_REF)
    parent = ws.add_candidate(task.task_id, NAIVE)
    store_check(ws, parent, passed())
    first = ws.add_candidate(task.task_id, NAIVE + "\n# first\n")
    second = ws.add_candidate(task.task_id, NAIVE + "\n# second\n")  # default parent: `first`, unchecked
    assert second.parent_id == first.candidate_id
    store_check(ws, second, failed())
    assert route_after(task.task_id, second.candidate_id).decision == "fix"
    # siblings: both written from `parent`, both fail -> each is one failure on its own line
    sibling = ws.add_candidate(task.task_id, NAIVE + "\n# sibling\n", parent_id=parent.candidate_id)
    store_check(ws, first, failed())
    store_check(ws, sibling, failed())
    assert route_after(task.task_id, sibling.candidate_id).decision == "fix"
    # ...but a child of a failed candidate is the second failure in a row
    grandchild = ws.add_candidate(task.task_id, NAIVE + "\n# grandchild\n", parent_id=sibling.candidate_id)
    store_check(ws, grandchild, failed())
    r = route_after(task.task_id, grandchild.candidate_id)
    assert r.decision == "replan" and sibling.candidate_id in r.reasons[0]


def test_explicit_parent_picks_whose_feedback_is_graded(ws):
    task = ws.add_task(RELU_REF)
    naive = ws.add_candidate(task.task_id, NAIVE)
    other = ws.add_candidate(task.task_id, NAIVE + "\n# an unrelated probe\n")
    save_feedback(naive.candidate_id, [VEC_ITEM])
    save_feedback(other.candidate_id, ["[tensor_cores] use WMMA for the product"])
    # by default the parent is the last candidate (the probe), whose feedback the kernel ignores
    default = rubric_score(candidate=IMPROVED, task_id=task.task_id)
    assert default.dimensions.skill_compliance.findings[0].message.startswith("[tensor_cores]")
    chosen = rubric_score(candidate=IMPROVED, task_id=task.task_id, parent_candidate_id=naive.candidate_id)
    f = chosen.dimensions.skill_compliance.findings
    assert [x.code for x in f] == ["feedback_done"] and f[0].message.startswith("[vectorized_access]")
    assert re.search(r"-> done: now uses vectorized .* at line \d+: `.*float4", f[0].message)
    assert ws.candidate(chosen.candidate_id).parent_id == naive.candidate_id
    with pytest.raises(UserError, match="parent_candidate_id: unknown candidate"):
        rubric_score(candidate=IMPROVED, task_id=task.task_id, parent_candidate_id="c-000000000000")
    with pytest.raises(UserError, match="its own parent"):
        rubric_score(candidate=IMPROVED, task_id=task.task_id, parent_candidate_id=chosen.candidate_id)


def test_skill_compliance_is_stable_when_the_parent_is_routed_again(ws):
    """Graded against what save_feedback stored, never the parent's latest routing text."""
    task = ws.add_task(RELU_REF)
    naive = ws.add_candidate(task.task_id, NAIVE)
    store_check(ws, naive, passed(0.9))
    route_after(task.task_id, naive.candidate_id)
    save_feedback(naive.candidate_id, [VEC_ITEM])
    improved = ws.add_candidate(task.task_id, IMPROVED)
    first = rubric_score(candidate_id=improved.candidate_id)
    store_check(ws, naive, failed())  # the parent re-checked: a new route with other feedback
    route_after(task.task_id, naive.candidate_id)
    again = rubric_score(candidate_id=improved.candidate_id)
    assert first.dimensions.skill_compliance == again.dimensions.skill_compliance
    assert skill_codes(again) == ["feedback_done"]


def test_no_fallback_item_names_its_evidence(ws):
    """'[no_fallback] ... (cuBLAS/cuDNN calls are fine)' asks to drop the PyTorch fallback, not cuBLAS."""
    task = ws.add_task(RELU_REF)
    hack = ws.add_candidate(task.task_id, FALLBACK)
    save_feedback(hack.candidate_id, ["[no_fallback] Remove this: torch::relu computes the output. Compute it in "
                                      "your own kernel (cuBLAS/cuDNN calls are fine).",
                                      "Remove the fallback; cuBLAS/cuDNN calls are fine (legitimate)"])
    r = rubric_score(candidate=NAIVE, task_id=task.task_id)
    msgs = [f.message for f in r.dimensions.skill_compliance.findings]
    assert [f.code for f in r.dimensions.skill_compliance.findings] == ["feedback_done", "feedback_done"], msgs
    for m in msgs:
        assert "cublas" not in m.split("->")[1].lower()  # never "cublas, cudnn removed"
        assert re.search(r"line \d+: `[^`]+`", m), m  # the line it rests on


def test_workspace_from_before_sessions_is_migrated(tmp_path):
    """An older database (no lineage table, no session columns) opens and keeps its parents."""
    import sqlite3

    db = tmp_path / "old.sqlite3"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE tasks (task_id TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL, path TEXT,
            created_at REAL NOT NULL, plan TEXT);
        CREATE TABLE candidates (candidate_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, source TEXT NOT NULL,
            source_hash TEXT NOT NULL, parent_id TEXT, path TEXT, created_at REAL NOT NULL);
        CREATE TABLE reports (report_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, task_id TEXT,
            candidate_id TEXT, created_at REAL NOT NULL, body TEXT NOT NULL);
        CREATE TABLE routes (route_id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL,
            candidate_id TEXT NOT NULL, decision TEXT NOT NULL, body TEXT NOT NULL, created_at REAL NOT NULL);
        INSERT INTO tasks VALUES ('t-1', 'old', 'src', NULL, 1.0, NULL);
        INSERT INTO candidates VALUES ('c-1', 't-1', 'a', 's-1', NULL, NULL, 1.0);
        INSERT INTO candidates VALUES ('c-2', 't-1', 'b', 's-2', 'c-1', NULL, 2.0);
    """)
    con.commit()
    con.close()
    from stitch_mcp.store import Workspace

    ws = Workspace(db)
    assert ws.candidate("c-2").parent_id == "c-1" and ws.ancestors("c-2") == ["c-1", "c-2"]
    ws.add_report("feedback", {"items": ["x"]}, task_id="t-1", candidate_id="c-2", session="s")
    assert ws.latest_report("feedback", candidate_id="c-2", session="s") == {"items": ["x"]}
    ws.close()




@pytest.mark.anyio
async def test_two_mcp_clients_keep_their_own_history(ws):
    """Two clients (two servers, as two stdio processes would be) on one workspace and task."""
    ref = str(CASES / "relu_reference.py")
    async with Client(create_server()) as a, Client(create_server()) as b:
        ra = await a.call_tool("rubric_score", {"candidate": str(CASES / "relu_naive.py"), "reference": ref})
        a_naive = ra.structured_content["candidate_id"]
        await a.call_tool("save_feedback", {"candidate_id": a_naive, "items": [VEC_ITEM]})
        rb = await b.call_tool("rubric_score", {"candidate": str(CASES / "relu_improved.py"), "reference": ref})
        assert rb.structured_content["dimensions"]["skill_compliance"]["findings"][0]["code"] == "no_feedback"
        ra2 = await a.call_tool("rubric_score", {"candidate": str(CASES / "relu_improved.py"), "reference": ref})
        codes = [f["code"] for f in ra2.structured_content["dimensions"]["skill_compliance"]["findings"]]
        assert codes == ["feedback_done"]
        # b names a's candidate as its parent: now the feedback is b's to follow only if b saved it
        rb2 = await b.call_tool("rubric_score", {"candidate": str(CASES / "relu_improved.py"), "reference": ref,
                                                 "parent_candidate_id": a_naive})
        assert not rb2.is_error
        assert rb2.structured_content["dimensions"]["skill_compliance"]["findings"][0]["code"] == "no_feedback"
        tools = {t.name: t for t in (await a.list_tools()).tools}
        assert "parent_candidate_id" in tools["compile_and_check"].input_schema["properties"]
        assert "parent_candidate_id" in tools["rubric_score"].input_schema["properties"]


@pytest.mark.slow  # three CLI processes (~6 s on 2 cores)
def test_cli_session_setting_keeps_the_lineage(tmp_path):
    """`stitch-mcp rubric` in one STITCH_SESSION sees its earlier candidate as the parent; another
    session does not."""
    env = {**os.environ, "STITCH_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT),
           "STITCH_ALLOWED_ROOTS": os.pathsep.join([str(ROOT), str(tmp_path)])}

    def rubric(candidate: str, session: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "stitch_mcp", "rubric", str(CASES / "relu_reference.py"),
                              str(CASES / candidate), "--json", "--session", session],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode in (0, 1), out.stderr
        return json.loads(out.stdout)

    first = rubric("relu_naive.py", "one")
    second = rubric("relu_improved.py", "one")
    other = rubric("relu_improved.py", "two")
    configure(data_dir=str(tmp_path / "data"))
    try:
        ws = get_workspace()
        assert ws.candidate(second["candidate_id"], "one").parent_id == first["candidate_id"]
        assert ws.candidate(other["candidate_id"], "two").parent_id is None
    finally:
        configure()


GEMM_REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(4096, 4096), torch.randn(4096, 4096)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("bound, said", [(None, None), ("compute", "compute-bound: FLOPs at the dtype's peak"),
                                         ("memory", "memory-bound")])
def test_speed_item_names_the_roofline_side(ws, bound, said):
    """A GEMM at '1% of the memory-bandwidth floor' was advice against the wrong ceiling: with no FLOP
    count behind the floor a compute-heavy task gets no [speed] item; with one it names the side."""
    from stitch_mcp.models import TimingReport, TimingStats

    task = ws.add_task(GEMM_REF)
    cand = ws.add_candidate(task.task_id, NAIVE.replace("relu", "mm"))
    report = passed(1.1)
    report.timing = TimingReport(candidate=TimingStats(median_ms=100.0), floor_ms=1.0, floor_fraction=0.01,
                                 floor_bound=bound)
    store_check(ws, cand, report)
    items = [i for i in route_after(task.task_id, cand.candidate_id).feedback if i.startswith("[speed]")]
    if said is None:
        assert items == []
    else:
        assert len(items) == 1 and "1% of its roofline floor" in items[0] and said in items[0]


def test_a_candidate_first_seen_by_profile_kernel_joins_the_callers_lineage(ws):
    """profile_kernel(candidate=source) registers the candidate in the caller's session, not the default one."""
    from stitch_mcp.profiling.kernel import _resolve

    task = ws.add_task(RELU_REF)
    first = ws.add_candidate(task.task_id, NAIVE, session="client")
    _, cand = _resolve(IMPROVED, None, None, task.task_id, session="client")
    assert cand.parent_id == first.candidate_id
    assert ws.lineage(task.task_id, "client") == [first.candidate_id, cand.candidate_id]
    assert ws.lineage(task.task_id) == []  # the default ("local") session saw nothing
