"""GPU-only faults through a real server process (skipped without CUDA): an illegal memory access,
GPU out-of-memory and a kernel that never ends. tests/test_check_gpu.py classifies the same
candidates through the Python API; here each goes through `stitch-mcp serve --http`, and after each

- the server keeps serving and the GPU is usable again: the honest CUDA candidate passes next,
- nothing is left running (the /proc marker scan of tests/faultkit.py) and no process of ours
  still holds a GPU context (NVML's compute processes),
- the workspace is intact (the report is readable through the resources).

The candidates share one binding source, so the binding object is built once.
Run on the GPU machine: pytest -m gpu tests/test_faults_gpu.py
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from faultkit import call_until_done, http_server, leftovers, new_marker, prog, resource_json, server_env, \
    wait_no_leftovers
from mcp import Client

pytestmark = [pytest.mark.anyio, pytest.mark.gpu]

RUN_TIMEOUT_S = 60
REF = prog("gpu_ref_relu")


def honest(tag: str) -> str:
    return Path(prog("gpu_cand_relu")).read_text() + f"\n# {tag}\n"


@pytest.fixture(scope="module")
def server(run_dir):
    marker = new_marker()
    data = run_dir / "faults-gpu" / "data"
    with http_server(marker, data, env=server_env(marker, data, STITCH_RUN_TIMEOUT_S=RUN_TIMEOUT_S)) as srv:
        yield srv
    assert not wait_no_leftovers(marker)


def gpu_pids() -> set[int]:
    import pynvml

    pynvml.nvmlInit()
    pids = set()
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        for fn in (pynvml.nvmlDeviceGetComputeRunningProcesses, pynvml.nvmlDeviceGetGraphicsRunningProcesses):
            try:
                pids.update(p.pid for p in fn(h))
            except pynvml.NVMLError:
                pass
    return pids


async def check(url: str, candidate: str) -> dict:
    async with Client(url) as c:
        return await call_until_done(c, "compile_and_check", {
            "candidate": candidate, "reference": REF, "timing": False, "compare_compile": False},
            max_wait_s=30, deadline_s=900)


async def assert_survived(srv, report: dict, tag: str) -> None:
    left = wait_no_leftovers(srv.marker, {srv.pid}, timeout=20)
    assert not left, f"left running after {tag}: {left}"
    ours = {pid for pid, _ in leftovers(srv.marker)} | {srv.pid}
    assert not (gpu_pids() & ours), "a process of ours still holds a GPU context"
    assert srv.alive(), srv.stderr_tail()
    async with Client(srv.url) as c:
        cand = await resource_json(c, f"stitch://candidates/{report['candidate_id']}")
        checks = [r["body"] for r in cand["reports"] if r["kind"] == "check"]
        assert checks and checks[-1]["error_kind"] == report["error_kind"]
    again = await check(srv.url, honest(f"after {tag}"))
    assert again["verdict"] == "pass", again["summary"]
    assert not wait_no_leftovers(srv.marker, {srv.pid}, timeout=20)


async def test_honest_cuda_candidate_passes_through_the_server(server):
    r = await check(server.url, honest("first"))
    assert r["verdict"] == "pass", r["summary"]
    assert r["timing"]["lease"].startswith("GPU")


async def test_illegal_memory_access(server):
    r = await check(server.url, prog("gpu_cand_oob"))
    assert r["verdict"] == "error" and r["error_kind"] in ("illegal_memory_access", "launch_failure"), r["summary"]
    assert any(w in r["reasons"][0].lower() for w in ("out of bounds", "illegal memory access", "launch failure"))
    await assert_survived(server, r, "illegal memory access")


async def test_gpu_out_of_memory(server):
    r = await check(server.url, prog("gpu_cand_oom"))
    assert r["verdict"] == "error" and r["error_kind"] == "cuda_oom", r["summary"]
    assert "out of memory" in r["reasons"][0].lower()
    await assert_survived(server, r, "GPU OOM")


async def test_kernel_that_never_ends(server):
    t0 = time.monotonic()
    r = await check(server.url, prog("gpu_cand_hang"))
    assert r["verdict"] == "error" and r["error_kind"] == "timeout", r["summary"]
    assert f"timed out after {RUN_TIMEOUT_S} s" in r["reasons"][0]
    assert time.monotonic() - t0 < RUN_TIMEOUT_S + 120
    await assert_survived(server, r, "endless kernel")
