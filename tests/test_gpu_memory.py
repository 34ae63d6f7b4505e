"""GPU memory held per check (stitch_mcp.gpu_memory, stitch_mcp.devices.reserve_memory): what a
check's estimate comes to, and that shares of one card are never handed out twice. The locks are
file locks, so threads with their own open files contend as processes do; no GPU is needed."""

from __future__ import annotations

import threading
import time
import types
import uuid

import pytest

from stitch_mcp.devices import MEMORY_SHARES, Gpu, reserve_memory
from stitch_mcp.gpu_memory import (BASELINE_COPIES, BASELINE_OVERHEAD_BYTES, COPIES, OVERHEAD_BYTES, baseline_need,
                                  estimate_need, held)

torch = pytest.importorskip("torch")
GiB = 1 << 30


def program(source: str) -> types.ModuleType:
    mod = types.ModuleType("reference")
    exec(source, mod.__dict__)
    return mod


RELU = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.rand(4096, 393216)]
def get_init_inputs():
    return []
"""

LINEAR = """
import torch
class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.gemm = torch.nn.Linear(n, 2 * n)
    def forward(self, x):
        return self.gemm(x)
def get_inputs():
    return [torch.randn(1024, 8192)]
def get_init_inputs():
    return [8192]
"""


def test_the_estimate_counts_inputs_outputs_and_weights_without_allocating():
    need = estimate_need(torch, program(RELU), [])  # 6 GiB of input: nothing of it is made
    assert need == (COPIES["inputs"] + COPIES["outputs"]) * 6 * GiB + OVERHEAD_BYTES
    lin = program(LINEAR)
    x, out, w = 1024 * 8192 * 4, 1024 * 16384 * 4, (8192 * 16384 + 16384) * 4
    assert estimate_need(torch, lin, [8192], extra_bytes=7) == \
        COPIES["inputs"] * x + COPIES["outputs"] * out + COPIES["weights"] * w + OVERHEAD_BYTES + 7
    assert baseline_need(torch, lin, [8192]) == BASELINE_COPIES["inputs"] * x + BASELINE_COPIES["outputs"] * out \
        + BASELINE_COPIES["weights"] * w + BASELINE_OVERHEAD_BYTES  # the reference alone: less than a check
    assert baseline_need(torch, lin, [8192]) < estimate_need(torch, lin, [8192])


def test_the_estimate_counts_the_forwards_intermediates_at_their_peak():
    """A loss over two 4 GiB inputs holds its differences and their squares at once: 8 GiB its
    output does not show (uncounted, such a task ran other checks out of memory on an H100)."""
    loss = RELU.replace("def forward(self, x):\n        return torch.relu(x)",
                        "def forward(self, x, y):\n        d = x - y\n        return torch.mean(d * d)") \
        .replace("return [torch.rand(4096, 393216)]", "return [torch.rand(4096, 262144), torch.rand(4096, 262144)]")
    need = estimate_need(torch, program(loss), [])
    assert need == COPIES["inputs"] * 8 * GiB + COPIES["outputs"] * 4 + COPIES["intermediates"] * 8 * GiB \
        + OVERHEAD_BYTES
    in_place = RELU.replace("return torch.relu(x)", "return torch.relu(x.view(-1)).add_(1).view(4096, -1)")
    assert estimate_need(torch, program(in_place), []) == estimate_need(torch, program(RELU), [])  # views: nothing new
    chain = RELU.replace("return torch.relu(x)", "for _ in range(4):\n            x = (x * 2).detach()\n        return x")
    assert estimate_need(torch, program(chain), []) == estimate_need(torch, program(RELU), []) \
        + COPIES["intermediates"] * 6 * GiB  # two steps alive at once, never four
    kept = RELU.replace("return torch.relu(x)", "y = (x * 2).detach()\n        z = y + 1\n        return z + 1")
    assert estimate_need(torch, program(kept), []) == estimate_need(torch, program(RELU), []) \
        + 2 * COPIES["intermediates"] * 6 * GiB  # y and z beside the output: y's storage outlives its first tensor


def test_a_reference_the_meta_device_cannot_run_is_estimated_as_well_as_can_be():
    data_dependent = RELU.replace("return [torch.rand(4096, 393216)]", "return [torch.rand(int(torch.rand(1).item()) + 4)]")
    assert estimate_need(torch, program(data_dependent), []) is None  # nothing known: the whole card
    opaque_model = RELU.replace("return torch.relu(x)", "return torch.tensor(x.tolist())")
    assert estimate_need(torch, program(opaque_model), []) == \
        (COPIES["inputs"] + COPIES["outputs"] + COPIES["intermediates"]) * 6 * GiB + OVERHEAD_BYTES  # as big as the inputs


def card(total: int = 80 * GiB) -> Gpu:
    return Gpu(0, f"test-{uuid.uuid4()}", "test card", memory_total=total)


def _checks(gpu, events: list, let_pass_s: float):
    def check(name: str, shares: int, hold_s: float) -> None:
        with reserve_memory(gpu, shares, poll_s=0.01, let_pass_s=let_pass_s):
            events.append(("in", name, time.monotonic()))
            time.sleep(hold_s)
            events.append(("out", name, time.monotonic()))

    def start(name: str, shares: int, hold_s: float, after_s: float) -> threading.Thread:
        time.sleep(after_s)
        t = threading.Thread(target=check, args=(name, shares, hold_s))
        t.start()
        return t

    return start


def test_shares_of_a_card_are_never_handed_out_twice_and_fitting_requests_pass_a_waiting_one():
    gpu, events = card(), []
    start = _checks(gpu, events, let_pass_s=30)
    threads = [start("big", MEMORY_SHARES - 4, 1.0, 0),
               start("small", 4, 0.1, 0.2),  # fits beside it
               start("large", 8, 0.1, 0.1),  # must wait for "big" to end: the head of the queue
               start("tiny", 3, 0.1, 0.2)]  # fits in what "small" left: passes "large"
    for t in threads:
        t.join(10)
    at = {(kind, name): t for kind, name, t in events}
    assert at[("in", "small")] < at[("out", "big")] and at[("in", "tiny")] < at[("out", "big")]
    assert at[("in", "large")] >= at[("out", "big")]
    held = 0
    for kind, name, _ in sorted(events, key=lambda e: e[2]):
        held += {"big": MEMORY_SHARES - 4, "small": 4, "large": 8, "tiny": 3}[name] * (1 if kind == "in" else -1)
        assert held <= MEMORY_SHARES


def test_a_request_waiting_long_enough_is_passed_by_no_one():
    gpu, events = card(), []
    start = _checks(gpu, events, let_pass_s=0.2)
    threads = [start("big", MEMORY_SHARES - 4, 1.2, 0),
               start("large", 8, 0.1, 0.1),  # the head from here; keeps what comes free after 0.2 s
               start("tiny", 3, 0.1, 0.5)]  # would fit in the 4 free shares, but "large" keeps them
    for t in threads:
        t.join(10)
    at = {(kind, name): t for kind, name, t in events}
    assert at[("out", "big")] <= at[("in", "large")] <= at[("in", "tiny")]


def test_a_check_that_needs_more_than_the_card_takes_all_of_it_and_waits_its_turn():
    from stitch_mcp.stage_results import MemoryHeld

    gpu, stages = card(40 * GiB), []
    with held({**gpu.__dict__}, 100 * GiB, stages.append) as got:
        assert got["shares"] == MEMORY_SHARES and got["need_bytes"] == 100 * GiB
        assert MemoryHeld.model_validate(got).shares == MEMORY_SHARES  # as the run stage's result carries it
        assert stages == ["waiting for GPU memory"]
        with pytest.raises(TimeoutError):
            with reserve_memory(gpu, 1, timeout_s=0.3):
                pass
    with held({**gpu.__dict__}, None, stages.append) as got:  # unknown: the whole card, now free again
        assert got["shares"] == MEMORY_SHARES
    with held({**gpu.__dict__}, 3 * GiB, stages.append) as got:
        assert got["shares"] == 3  # 40 GiB in 32 shares of 1.25 GiB


def test_a_check_that_must_wait_is_told_once_before_it_waits():
    """gpu_memory.held's `on_wait` (a judge puts rooms without a CUDA context in place of its spare
    ones there): called once where the shares are not free at once, never where they are."""
    gpu, calls = card(), []
    with held({**gpu.__dict__}, 3 * GiB, lambda _: None, on_wait=lambda: calls.append("first")):
        assert calls == []
        done = threading.Event()

        def second() -> None:
            with held({**gpu.__dict__}, 79 * GiB, lambda _: None, on_wait=lambda: calls.append("second")):
                done.set()

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.5)
        assert calls == ["second"] and not done.is_set()
    t.join(10)
    assert done.is_set() and calls == ["second"]


def test_a_check_waiting_for_memory_is_seen_by_the_spares_about_to_start(monkeypatch):
    """devices.memory_waited_for: while a check waits for its shares, spare rooms start without a CUDA
    context (devices.spare_cuda_ahead_device), since a waiting check would swap theirs away; a check
    that found its shares free waits for nothing."""
    import sys

    import stitch_mcp.devices as devices
    from stitch_mcp.devices import memory_waited_for, spare_cuda_ahead_device

    gpu = card()
    nvml = types.SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 1,
                                 nvmlDeviceGetHandleByIndex=lambda i: i,
                                 nvmlDeviceGetUUID=lambda handle: gpu.uuid.encode())  # bytes, as older NVML gives
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert devices.cuda_ahead_device() == "0" and spare_cuda_ahead_device() == "0"
    # the shares' reserve for the spares' contexts (cuda_ahead_device) does not change with it: every
    # judge must divide the card alike
    _seen_while_a_check_waits(gpu, lambda: memory_waited_for(gpu) and spare_cuda_ahead_device() is None
                              and devices.cuda_ahead_device() == "0")
    assert spare_cuda_ahead_device() == "0"


def _seen_while_a_check_waits(gpu, seen) -> None:
    from stitch_mcp.devices import memory_waited_for

    assert not memory_waited_for(gpu)
    with held({**gpu.__dict__}, 60 * GiB, lambda _: None):
        assert not memory_waited_for(gpu)  # took its shares at once
        waiting, done = threading.Event(), threading.Event()

        def second() -> None:
            with held({**gpu.__dict__}, 60 * GiB, lambda _: None, on_wait=waiting.set):
                done.set()

        t = threading.Thread(target=second)
        t.start()
        assert waiting.wait(5)
        time.sleep(0.2)
        assert seen() and not done.is_set()
    t.join(5)
    assert done.is_set() and not memory_waited_for(gpu)


def test_spare_rooms_contexts_are_kept_out_of_the_shares(monkeypatch):
    """Where spare rooms make their CUDA context ahead (devices.cuda_ahead_device: one GPU in use,
    spares, no check with the card to itself), the server's chosen GPU carries what they hold, two
    rooms per spare worker, and the shares divide the rest of the card."""
    import dataclasses
    import sys

    import stitch_mcp.devices as devices
    from stitch_mcp.config import get_settings
    from stitch_mcp.gpu_memory import share_bytes

    count = [1]
    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=lambda: None,
                                                                     nvmlDeviceGetCount=lambda: count[0]))
    monkeypatch.setattr(devices, "discover", lambda: [card()])
    assert devices.cuda_ahead_device() == "0"
    reserved = 2 * get_settings().spare_workers * devices.ROOM_CONTEXT_BYTES
    gpu = devices.choose_device()
    assert reserved > 0 and gpu.reserved_bytes == reserved
    assert share_bytes(gpu) == (80 * GiB - reserved) / MEMORY_SHARES
    assert share_bytes(dataclasses.replace(gpu, reserved_bytes=0)) == 80 * GiB / MEMORY_SHARES
    with devices.whole_card_run():  # the spares are dropped meanwhile and make no context ahead
        assert devices.cuda_ahead_device() is None and devices.choose_device().reserved_bytes == 0
    count[0] = 2  # two GPUs: a spare does not know which its check will run on
    assert devices.cuda_ahead_device() is None and devices.choose_device().reserved_bytes == 0


def test_without_a_gpu_nothing_is_held(monkeypatch):
    import stitch_mcp.devices as devices

    monkeypatch.setattr(devices, "discover", lambda: [])
    with held(None, 10 * GiB, lambda name: pytest.fail("no stage without a GPU")) as got:
        assert got == {}


def test_only_running_out_of_memory_beside_others_is_judged_again():
    from stitch_mcp.gpu_memory import out_of_memory_beside_others
    from stitch_mcp.stage_results import RunStageResult

    def again(result, message=""):  # a run stage's result as the server reads it
        return out_of_memory_beside_others(None if result is None else RunStageResult.model_validate(result), message)

    part = {"shares": 12, "of_shares": MEMORY_SHARES}
    oom = {"kind": "cuda_oom", "message": "OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB"}
    assert again({"memory": part, "error": oom})
    assert again({"memory": part, "error": {"kind": "internal", "message": "RuntimeError: cuMemCreate failed (2)"}})
    assert again({"memory": part, "error": {"kind": "reference_error", "message": "reference forward raised "
                                                                                   "OutOfMemoryError: CUDA out of memory"}})
    assert not again({"memory": {**part, "shares": MEMORY_SHARES}, "error": oom})  # it had the card: a verdict
    assert not again({"error": oom})  # nothing was held (no GPU): nothing to blame on others
    assert not again({"memory": part, "error": {"kind": "runtime_error", "message": "index out of range"}})
    assert not again(None, "")


def test_other_input_distributions_are_drawn_in_chunks(monkeypatch):
    """The judge's trials on normal and heavy-tailed inputs draw them a chunk at a time: a level-1
    task's 6 GiB input with whole-size temporaries ran the judge past its share of the card beside
    other checks (an H100, 2026-11-26: four reductions over 8 GiB inputs judged again alone)."""
    from stitch_mcp import correctness

    sizes = []
    real_draw = correctness._draw
    monkeypatch.setattr(correctness, "DRAW_CHUNK", 1000)
    monkeypatch.setattr(correctness, "_draw", lambda torch, n, *a: sizes.append(n) or real_draw(torch, n, *a))
    x = torch.rand(50, 101) * 4 - 1  # mean 1, some negative
    pos = torch.rand(5050) + 2
    for kind in ("normal", "heavy_tailed"):
        sizes.clear()
        y, p = correctness.distribute([x, pos, 3], kind, seed=7, device="cpu")[:2]
        assert max(sizes) == 1000 and sum(sizes) == 2 * 5050
        assert y.shape == x.shape and y.dtype == x.dtype and not torch.equal(y, x)
        assert abs(float(y.mean()) - float(x.mean())) < 0.3 and 0.5 < float(y.std()) / float(x.std()) < 2
        assert float(p.min()) >= 2  # non-negative inputs keep their sign and floor
    again = correctness.distribute([x], "heavy_tailed", seed=7, device="cpu")[0]
    assert torch.equal(again, correctness.distribute([x], "heavy_tailed", seed=7, device="cpu")[0])


FAKE_COMPILE_PROBE = r"""
import json, sys, types
import torch
from torch._dynamo.utils import counters
from stitch_mcp.correctness import compile_on_fake_tensors, compile_reference
from stitch_mcp.loader import build_model, make_inputs
from stitch_mcp.timing import one_core

mod = types.ModuleType("reference")
exec(sys.stdin.read(), mod.__dict__)
device = sys.argv[1]
fake_s = compile_on_fake_tensors(torch, mod, [], device)
after_fake = torch.cuda.max_memory_allocated() if device == "cuda" else 0
counters.clear()
model = build_model(mod.Model, [], device)
inputs = make_inputs(mod, device, 0)
compiled = compile_reference(model, inputs, device)
with torch.no_grad(), one_core(device):  # as the judge calls it: compiled for one thread where rooms are timed so
    right = bool(torch.allclose(compiled.model(*inputs), model(*inputs), rtol=1e-4, atol=1e-4))
print(json.dumps({"fake_s": fake_s, "hits": counters["inductor"]["fxgraph_cache_hit"],
                  "misses": counters["inductor"]["fxgraph_cache_miss"], "right": right,
                  "allocated_by_fake": after_fake, "note": compiled.note}))
"""

# two graphs (a graph break between them), a constant made for real at import, a weight
TWO_GRAPHS = """
import torch
SCALE = torch.tensor(3.0)
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64))
    def forward(self, x):
        y = torch.relu(x) * self.w
        torch._dynamo.graph_break()
        return (y * SCALE).sum(1)
def get_inputs():
    return [torch.randn(32, 64)]
def get_init_inputs():
    return []
"""


def _fake_compile_probe(tmp_path, reference: str, device: str) -> dict:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", FAKE_COMPILE_PROBE, device], input=reference, text=True,
                          capture_output=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(300)
def test_compiling_on_fake_tensors_leaves_the_real_first_call_only_cache_hits(tmp_path):
    """torch.compile's baseline is compiled before the check's memory share on fake tensors, so that
    the share is held for a first call that finds every graph compiled (twelve checks held 9-11 of
    the card's 32 shares each for seconds of CPU, H100 2026-11-26). On the CPU: each graph of the
    reference (two, around a graph break) is a hit of inductor's cache in the real compile, which
    gives the reference's result."""
    probe = _fake_compile_probe(tmp_path, TWO_GRAPHS, "cpu")
    assert probe["fake_s"] is not None
    assert probe["hits"] == 2 and probe["misses"] == 0 and probe["right"], probe


@pytest.mark.timeout(300)
def test_a_reference_that_cannot_run_on_fake_tensors_is_compiled_for_real(tmp_path):
    """A reference whose inputs need real values (a value read back) cannot be compiled on fake
    tensors: that try gives up quietly and the real first call compiles everything, as before."""
    reading = TWO_GRAPHS.replace("return [torch.randn(32, 64)]",
                                 "n = int(torch.randint(32, 33, (1,)).item())\n    return [torch.randn(n, 64)]")
    probe = _fake_compile_probe(tmp_path, reading, "cpu")
    assert probe["fake_s"] is None
    assert probe["hits"] == 0 and probe["misses"] == 2 and probe["right"], probe


@pytest.mark.gpu
def test_compiling_on_fake_tensors_allocates_no_tensors_on_the_card(tmp_path):
    """No input, output or intermediate is allocated (the fake tensors start CUDA's context, which
    the judge makes anyway); the real first call then finds its graph in inductor's cache."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    big = RELU.replace("return torch.relu(x)", "return torch.softmax(torch.relu(x) * 2, dim=1)")
    probe = _fake_compile_probe(tmp_path, big, "cuda")
    # at most FakeTensor's one-element tensor that starts the context (7 KiB on an H100), against 6 GiB
    # of inputs and as much output
    assert probe["fake_s"] is not None and probe["allocated_by_fake"] < 1 << 20, probe
    assert probe["hits"] >= 1 and probe["misses"] == 0 and probe["right"], probe
