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


def _count_up(path: str, times: int, barrier) -> None:
    ws = Workspace(path)
    barrier.wait()
    for _ in range(times):
        ws.update_report("baseline", "t-1", lambda body: {"n": (body or {"n": 0})["n"] + 1})
    ws.close()


def test_processes_updating_one_report_together_lose_no_change(tmp_path):
    """A task's baseline record is read, changed and written back by each check that ends; four
    processes doing that 40 times each at once end with every change in (a plain read and write
    kept 157 of 160 in one run here)."""
    ctx = mp.get_context("fork")
    path, n, times = str(tmp_path / "ws.sqlite"), 4, 40
    Workspace(path).close()
    barrier = ctx.Barrier(n)
    procs = [ctx.Process(target=_count_up, args=(path, times, barrier)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * n
    assert Workspace(path).latest_report("baseline", task_id="t-1") == {"n": n * times}
    ws = Workspace(path)
    ws.update_report("baseline", "t-1", lambda body: None)  # no change: nothing stored
    assert ws.latest_report("baseline", task_id="t-1") == {"n": n * times}
