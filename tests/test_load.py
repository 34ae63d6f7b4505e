"""Load: 20 concurrent compile_and_check calls over streamable HTTP on loopback, against a real
`stitch-mcp serve --http` process, each from its own client session.

All are answered (following job_status when a call answers "running"), none is lost in the
workspace (20 candidates, each with its stored check report, readable through the resources), and
the timing windows (report.timing.window, the span the run stage held its device) never overlap on
one device (grouped by report.timing.lease). The candidates are plain PyTorch, 20 distinct sources
(distinct candidates, no shared job), so nothing is built and the test measures the server.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from faultkit import call_until_done, http_server, new_marker, prog, resource_json, server_env, wait_no_leftovers
from mcp import Client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLS = 20
DEADLINE_S = 600  # the whole batch; on 2 loaded cores it takes 1-3 minutes (run stages are serialised)
RUN_TIMEOUT_S = 300  # the server's run-stage limit here: a check's run stage waits behind the others'


def candidate(i: int) -> str:
    return Path(prog("cand_relu_torch")).read_text() + f"\n# load-test candidate {i}\n"


async def test_twenty_concurrent_checks_over_http(run_dir):
    marker = new_marker()
    data = run_dir / "load" / "data"
    env = server_env(marker, data, STITCH_RUN_TIMEOUT_S=RUN_TIMEOUT_S, STITCH_TIMING_ITERS=20)
    results: dict[int, dict] = {}
    errors: list[str] = []
    with http_server(marker, data, env=env) as srv:
        t0 = time.monotonic()

        async def one(i: int) -> None:
            try:
                async with Client(srv.url) as c:
                    results[i] = await call_until_done(
                        c, "compile_and_check",
                        {"candidate": candidate(i), "reference": prog("ref_relu"), "timing": True,
                         "compare_compile": False},
                        max_wait_s=10, deadline_s=DEADLINE_S, stage_limits={"run": float(RUN_TIMEOUT_S)})
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                errors.append(f"call {i}: {type(exc).__name__}: {exc}")

        with anyio.fail_after(DEADLINE_S + 60):
            async with anyio.create_task_group() as tg:
                for i in range(CALLS):
                    tg.start_soon(one, i)
        wall = time.monotonic() - t0
        assert not errors, errors
        assert sorted(results) == list(range(CALLS)), "some calls were never answered"
        followed = sum(r["_followed_job_status"] > 0 for r in results.values())
        assert all(r["verdict"] == "pass" for r in results.values()), \
            [r["summary"] for r in results.values() if r["verdict"] != "pass"]
        assert len({r["candidate_id"] for r in results.values()}) == CALLS
        task_ids = {r["task_id"] for r in results.values()}
        assert len(task_ids) == 1

        # none lost: the workspace holds every candidate and its check report
        async with Client(srv.url) as c:
            history = await resource_json(c, f"stitch://tasks/{task_ids.pop()}/history")
            assert {row["candidate_id"] for row in history["candidates"]} == \
                {r["candidate_id"] for r in results.values()}
            assert all(row["verdict"] == "pass" for row in history["candidates"])
            stored = []
            for r in results.values():
                cand = await resource_json(c, f"stitch://candidates/{r['candidate_id']}")
                checks = [rep["body"] for rep in cand["reports"] if rep["kind"] == "check"]
                assert len(checks) == 1, f"{r['candidate_id']}: {len(checks)} check reports"
                stored.append(checks[0])

        # timing windows never overlap on one device
        by_device: dict[str, list[tuple[float, float]]] = {}
        for body in stored:
            t = body["timing"]
            assert t["candidate"] and t["window"] and t["lease"], t
            start, end = t["window"]
            assert start <= end
            by_device.setdefault(t["lease"], []).append((start, end))
        for device, windows in by_device.items():
            windows.sort()
            for (_, end), (start, _) in zip(windows, windows[1:]):
                assert start >= end, f"two timing windows overlapped on {device}"
        waits = sorted(body["timing"]["lease_wait_s"] for body in stored)
        assert waits[-1] > 0, "20 concurrent calls and nobody waited for the device?"
        assert srv.alive()
        print(f"\n{CALLS} concurrent checks in {wall:.1f} s ({followed} followed job_status); devices "
              f"{ {d: len(w) for d, w in by_device.items()} }; lease wait median {waits[len(waits) // 2]:.1f} s, "
              f"max {waits[-1]:.1f} s")
    assert not wait_no_leftovers(marker)
