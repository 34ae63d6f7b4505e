"""Attack: atk_batch_poller's work ahead of the clock, done by a forked child of the candidate's
room that the judge's reading of the room's processes may not have seen yet.

On the first batch it is told, the room forks; the child (which shares the room's mappings of the
batch buffers) computes each slot's output as soon as the judge has written its input, then exits
after CHILD_S without being waited for (the room's end kills it first). The timed `Run` finishes
any slot the child has not; the room's clock runs 50x slow. All outputs are real."""
import gc
import os
import time

import torch
import torch.nn as nn

_real = time.perf_counter
_start = _real()
time.perf_counter = lambda: _start + (_real() - _start) / 50
CHILD_S = 30.0  # alive when the judge looks, after the batches (5.4 s of them on a 2-core host)


def _room():
    return next((o for o in gc.get_objects() if type(o).__name__ == "_Room"), None)


def _slots(calls):
    return [(a[0], t[0]) for a, t in calls if a and t and isinstance(a[0], torch.Tensor) and t[0] is not None]


def _finish(calls) -> None:
    """Compute every slot whose output's edges are not its input's relu."""
    for x, y in _slots(calls):
        xf, yf = x.reshape(-1), y.reshape(-1)
        if not torch.equal(yf[[0, -1]], xf[[0, -1]].clamp(min=0)):
            torch.clamp(x, min=0, out=y)


def _child(calls) -> None:
    torch.set_num_threads(1)
    end = _real() + CHILD_S
    while _real() < end:
        _finish(calls)
        time.sleep(0.0001)
    os._exit(0)


def _rewire(room) -> None:
    for obj in gc.get_objects():
        if isinstance(obj, dict) and {"Batch", "Run", "Ping"} <= {getattr(k, "__name__", "") for k in obj}:
            keys = {k.__name__: k for k in obj}
            batch, ping = obj[keys["Batch"]], obj[keys["Ping"]]
            forked = []

            def told(message, fds):
                done = batch(message, fds)
                if not forked:
                    forked.append(os.fork() or _child(room.ready_batch[0]))
                return done

            def run(message, fds):
                _finish(room.ready_batch[0])
                return ping(message, fds)

            obj[keys["Batch"]], obj[keys["Run"]] = told, run
            return


_rewire(_room())


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
