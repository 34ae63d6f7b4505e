"""GPU leases (file locks shared by threads and processes) and batch-evaluation bookkeeping."""

from __future__ import annotations

import threading
import time

import pytest

from stitch_mcp.devices import Gpu, acquire_device
from stitch_mcp.errors import UserError
from stitch_mcp.evaluate import fast_p, match

GPU0 = Gpu(0, "GPU-test-0", "test", memory_total=100, memory_used=0)
GPU1 = Gpu(1, "GPU-test-1", "test", memory_total=100, memory_used=0)
BUSY = Gpu(2, "GPU-test-2", "test", memory_total=100, memory_used=90)


def _windows(gpus, workers=4, hold=0.15):
    windows, lock = [], threading.Lock()

    def work():
        with acquire_device(gpus=gpus) as lease:
            start = time.monotonic()
            time.sleep(hold)
            with lock:
                windows.append((lease.gpu.index if lease.gpu else -1, start, time.monotonic()))

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return windows


def test_one_gpu_never_holds_two_leases_at_once():
    windows = sorted(_windows([GPU0]))
    assert len(windows) == 4
    for (_, _, end), (_, start, _) in zip(windows, windows[1:]):
        assert start >= end, "two timing windows overlapped on one GPU"


def test_leases_spread_over_gpus_and_prefer_idle_ones():
    # GPUs of its own: the test above, in another pytest worker, holds GPU0's lock by turns
    gpus = [Gpu(g.index, g.uuid + "-spread", g.name, memory_total=100, memory_used=g.memory_used)
            for g in (BUSY, GPU0, GPU1)]
    windows = _windows(gpus, workers=2, hold=0.3)
    assert sorted(w[0] for w in windows) == [0, 1]  # the busy GPU 2 was passed over
    with acquire_device(gpus=[BUSY]) as lease:
        assert "in use by other work" in lease.note
        assert lease.worker_env() == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "2"}


def test_a_gpu_loaded_only_by_our_own_workers_is_not_busy():
    """Memory and utilisation just after our previous worker ended are not someone else's work."""
    loaded = dict(memory_total=100, memory_used=90, utilization_pct=80)
    assert not Gpu(3, "GPU-test-3", "test", **loaded, foreign_processes=0).busy
    assert Gpu(3, "GPU-test-3", "test", **loaded, foreign_processes=1).busy
    assert Gpu(3, "GPU-test-3", "test", **loaded).busy  # processes unknown: the load decides


def test_without_a_gpu_the_cpu_is_leased_exclusively():
    windows = sorted(_windows([], workers=3, hold=0.1))
    for (_, _, end), (_, start, _) in zip(windows, windows[1:]):
        assert start >= end, "two CPU timing windows overlapped"
    with acquire_device(gpus=[]) as lease:
        assert lease.gpu is None and lease.worker_env() == {} and lease.label == "CPU"


def test_match_pairs_by_name_and_reports_unmatched(tmp_path):
    problems, cands = tmp_path / "p", tmp_path / "c"
    problems.mkdir(), cands.mkdir()
    (problems / "1_Relu.py").write_text("x\n")
    (problems / "2_Gelu.py").write_text("x\n")
    (cands / "1_Relu.py").write_text("a\n")
    (cands / "2_Gelu").mkdir()
    (cands / "2_Gelu" / "v1.py").write_text("b\n")
    (cands / "2_Gelu" / "v2.py").write_text("c\n")
    (cands / "3_Typo.py").write_text("d\n")
    pairs, unmatched = match(problems, cands)
    assert [(p.problem, p.candidate.name) for p in pairs] == [("1_Relu", "1_Relu.py"), ("2_Gelu", "v1.py"),
                                                             ("2_Gelu", "v2.py")]
    assert unmatched == ["3_Typo.py"]
    with pytest.raises(UserError, match="PROBLEMS_DIR"):
        match(tmp_path / "nope", cands)


def test_fast_p_counts_best_candidate_per_problem():
    rows = [{"problem": "a", "verdict": "pass", "speedup_vs_eager": 1.2},
            {"problem": "a", "verdict": "pass", "speedup_vs_eager": 2.5},
            {"problem": "b", "verdict": "fail", "speedup_vs_eager": 9.0},
            {"problem": "c", "verdict": "pass", "speedup_vs_eager": 0.8},
            {"problem": "d", "verdict": "pass", "speedup_vs_eager": 1.6}]
    assert fast_p(rows, "speedup_vs_eager") == {0.0: 0.75, 1.0: 0.5, 1.5: 0.5, 2.0: 0.25}


def test_a_check_that_fails_inside_the_server_is_its_rows_error_and_checked_again_on_resume(tmp_path, monkeypatch):
    """One check's internal error must not lose the whole evaluation's rows (an H100 eval lost all 56
    to one AttributeError, 2026-11-26), nor stand as that candidate's result when the eval resumes."""
    import json
    from types import SimpleNamespace

    import stitch_mcp.check
    from stitch_mcp.evaluate import evaluate

    problems, cands = tmp_path / "p", tmp_path / "c"
    problems.mkdir(), cands.mkdir()
    for name in ("1_Relu", "2_Gelu"):
        (problems / f"{name}.py").write_text("x\n")
        (cands / f"{name}.py").write_text("y\n")

    def check(*, reference, candidate):
        if "Gelu" in candidate and not fixed:
            raise AttributeError("'dict' object has no attribute 'model_dump'")
        return SimpleNamespace(verdict="pass", speedup_vs_eager=1.5, speedup_vs_compile=None, reasons=[],
                               task_id="t", candidate_id="c", stage_seconds={})

    monkeypatch.setattr(stitch_mcp.check, "compile_and_check", check)
    out = tmp_path / "rows.jsonl"
    fixed = False
    rows, _ = evaluate(problems, cands, out, jobs=2)
    by_problem = {r["problem"]: r for r in rows}
    assert by_problem["1_Relu"]["verdict"] == "pass"
    assert by_problem["2_Gelu"]["verdict"] == "error" and by_problem["2_Gelu"]["internal"]
    assert "internal error: AttributeError" in by_problem["2_Gelu"]["reasons"][0]
    fixed = True
    rows, _ = evaluate(problems, cands, out, jobs=2)
    assert sorted((r["problem"], r["verdict"]) for r in rows) == [("1_Relu", "pass"), ("2_Gelu", "pass")]
    assert len(out.read_text().splitlines()) == 3  # the resumed run checked only the one that failed
    assert json.loads(out.read_text().splitlines()[-1])["problem"] == "2_Gelu"



def _reference(path, body):
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return x * 2\n\n\n" + body +
                    "\n\ndef get_init_inputs():\n    return []\n")
    return path


def test_eval_starts_the_checks_heaviest_on_gpu_memory_beside_the_lightest(tmp_path, monkeypatch):
    """KernelBench's level-1 tasks need most of an 80 GB card each: in name order they came
    together and every job waited for memory while nothing built (H100, 2026-11-26). Estimated
    in a child process on the meta device, as the judge does; a reference that cannot be
    estimated counts as the heaviest (its check takes the whole card); its output is not read as
    the answer."""
    import stitch_mcp.cuda_tools
    from stitch_mcp.evaluate import _start_order
    from stitch_mcp.memory_order import memory_needs

    problems = tmp_path / "problems"
    problems.mkdir()
    sizes = {"1_small": 64, "2_huge": 8192, "3_tiny": 8, "4_mid": 1024, "5_large": 4096}
    for name, n in sizes.items():
        _reference(problems / f"{name}.py", f"print('noise at import')\n\ndef get_inputs():\n"
                                           f"    return [torch.randn({n}, {n})]")
    _reference(problems / "6_gpu_at_import.py", "torch.zeros(1).cuda()\n\ndef get_inputs():\n"
                                                "    return [torch.randn(8, 8)]")
    _reference(problems / "7_stays.py", "import os, threading, time\nos.write(1, b'not json')\n"
                                        "threading.Thread(target=time.sleep, args=(600,)).start()\n\n"
                                        "def get_inputs():\n    return [torch.randn(2, 2)]")
    monkeypatch.chdir(tmp_path)  # paths as a user gives them: relative to where eval runs
    t0 = time.monotonic()
    needs = memory_needs(sorted(p.relative_to(tmp_path) for p in problems.glob("*.py")))
    assert time.monotonic() - t0 < 60  # a reference's thread does not keep the estimate waiting
    by_name = {p.split("/")[-1][:-3]: n for p, n in needs.items()}
    assert by_name["6_gpu_at_import"] is None and by_name["7_stays"] < by_name["3_tiny"]
    assert by_name["2_huge"] > by_name["5_large"] > by_name["4_mid"] > by_name["1_small"] > by_name["3_tiny"]
    assert by_name["2_huge"] - by_name["5_large"] == 3 * (8192 ** 2 - 4096 ** 2) * 4 + \
        5 * (8192 ** 2 - 4096 ** 2) * 4  # the judge's copies of inputs and outputs (gpu_memory.COPIES)

    from stitch_mcp.evaluate import match

    cands = tmp_path / "cands"
    cands.mkdir()
    for p in problems.glob("*.py"):
        (cands / p.name).write_text("y\n")
    pairs, _ = match(problems, cands)
    given = pairs[::-1]
    monkeypatch.setattr(stitch_mcp.cuda_tools, "nvidia_devices", lambda: [])
    assert _start_order(given) == given  # no GPU: as given
    monkeypatch.setattr(stitch_mcp.cuda_tools, "nvidia_devices", lambda: ["GPU-0"])
    assert [p.problem for p in _start_order(given)] == [
        "6_gpu_at_import", "7_stays", "2_huge", "3_tiny", "5_large", "1_small", "4_mid"]
    for p in problems.glob("*.py"):
        p.write_text("raise SystemExit(3)\n")
    assert _start_order(given) == given  # nothing known: as given


def test_heaviest_beside_lightest_keeps_equal_needs_in_order():
    from stitch_mcp.memory_order import heaviest_beside_lightest

    needs = {"a": 5, "b": 1, "c": 5, "d": None, "e": 1}
    assert heaviest_beside_lightest(list("abcde"), needs.get) == ["d", "e", "a", "b", "c"]
    assert heaviest_beside_lightest([], needs.get) == []
    assert heaviest_beside_lightest(["a"], needs.get) == ["a"]
