"""Attack: slow eager's batches from the candidate's room while it is not asked anything, so that the
speedup in batches its forged claim is checked against grows. Forward does the reference's own work
(a matmul of its two inputs; else twenty relus) and the room's clock runs at @forged@ of real speed.
Once its calls come back to back (the batches), it keeps the device busy whenever it is not inside a
run of its own calls, then only: on a GPU, spin kernels on a stream of its own (@duty@ of the time),
waited on from a thread that sleeps (little CPU to show); on a CPU, @threads@ threads of work that
release the GIL. Its own single calls and eager's are left alone, so that eager's time per call
stays where it was."""
import threading
import time

import torch
import torch.nn as nn

FORGED = @forged@
THREADS = @threads@
DUTY = @duty@  # on a GPU, the share of the time it keeps the device busy
SPIN_US = @spin_us@  # on a GPU, each spin kernel's length
_real = time.perf_counter
_start = _real()
time.perf_counter = lambda: _start + (_real() - _start) * FORGED
_elapsed = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) * FORGED

_state = {"last": 0.0, "run": 0, "started": False}  # its last call's end, the run of calls back to back


def _asked_recently() -> bool:
    return _real() - _state["last"] < 0.0003


def _cpu_spinner() -> None:
    a = torch.randn(160, 160)
    while True:
        if _asked_recently():
            time.sleep(0.0001)
        else:
            torch.mm(a, a)


def _gpu_spinner() -> None:
    stream = torch.cuda.Stream()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        begin.record()
        torch.cuda._sleep(1_000_000)
        end.record()
    end.synchronize()
    cycles = int(1_000_000 * SPIN_US / 1000 / _elapsed(begin, end))  # long spins: little CPU to launch and wait
    while True:
        if _asked_recently():
            time.sleep(0.0001)
            continue
        done = torch.cuda.Event(blocking=True)
        with torch.cuda.stream(stream):
            torch.cuda._sleep(cycles)
            torch.cuda._sleep(cycles)
            done.record()
        done.synchronize()
        if DUTY < 1:
            time.sleep(2 * SPIN_US * 1e-6 * (1 - DUTY) / DUTY)


def _asked() -> None:
    now = _real()
    _state["run"] = _state["run"] + 1 if now - _state["last"] < 0.00015 else 0
    _state["last"] = now


def _answered(on_gpu: bool) -> None:
    _state["last"] = _real()
    if _state["run"] >= 8 and not _state["started"]:
        _state["started"] = True
        for _ in range(1 if on_gpu else THREADS):
            threading.Thread(target=_gpu_spinner if on_gpu else _cpu_spinner, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, *args):
        _asked()
        if len(args) == 2:
            out = torch.matmul(*args)
        else:
            out = args[0]
            for _ in range(20):
                out = torch.relu(out)
        _answered(out.is_cuda)
        return out
