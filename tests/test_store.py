"""The workspace store opened by many processes at once (Ray tasks, eval's jobs): a new workspace
is set up once, and nobody sees "database is locked" or a column added twice (a Ray test met the
second in CI)."""

from __future__ import annotations

import multiprocessing as mp

from stitch_mcp.store import Workspace


def _open(path: str, barrier, answers) -> None:
    barrier.wait()
    try:
        Workspace(path).close()
        answers.put("ok")
    except Exception as exc:  # reported to the test, which names it
        answers.put(repr(exc))


def test_processes_opening_a_new_workspace_together_all_get_it(tmp_path):
    ctx = mp.get_context("fork")
    for round_ in range(6):
        path, n = str(tmp_path / f"ws-{round_}.sqlite"), 8
        barrier, answers = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=_open, args=(path, barrier, answers)) for _ in range(n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        got = [answers.get(timeout=10) for _ in range(n)]
        assert got == ["ok"] * n, got
