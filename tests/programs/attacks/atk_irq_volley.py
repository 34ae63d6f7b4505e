"""Attack (red team, session 25; test_interrupt_volleys_that_slip_under_the_count_gain_nothing):
interrupt *volleys*. One timer interrupt can carry milliseconds of kernel work: @tf@ timerfds,
each watched by the same @ne@ epoll instances under @nums@ fd numbers (nobody ever waits on them),
armed to expire at the same instants, so that each expiry runs tf*ne*nums epoll wake-up callbacks in
hard-irq context (about 0.2 us each on the 2-core host), billed (CONFIG_IRQ_TIME_ACCOUNTING off) to
whatever task is on the shared core: the reference's room, when it is being timed. The judge counts
interrupts per ms in each room's windows (judge.timing.interrupt_rates, STORM_MARGIN = 2/ms): a
volley every @period_us@ us is at most 1000/period extra interrupts per ms, each carrying ~tf*ne*0.2 us.
Arming costs the candidate a few syscalls per block (one timerfd_settime each, periodic timers).

It fires while the reference's room is being timed and the candidate not: after the candidate's
last call of each interleaved block of five (the reference's block comes next), and after each of its
smaller batches (the reference's larger batch comes next); disarmed when its next message arrives.
Forward is the reference's own work (@fwd@: "mm_tanh" = tanh(a @ b), "relu").
@single@ / @batch@ = yes|no: which phases get volleys."""
import ctypes
import select
import struct
import sys
import time

import torch
import torch.nn as nn

TF = int("@tf@")
NE = int("@ne@")  # epolls
NUMS = int("@nums@")  # fd numbers each timerfd is entered under, in each epoll
NUM0 = 3000
FROM, TO = float("@from@"), float("@to@")  # the share of the wait the volleys cover
PERIOD_NS = int(float("@period_us@") * 1000)
SINGLE = "@single@" == "yes"
BATCH = "@batch@" == "yes"
FWD = "@fwd@"
LOG = "@log@" == "yes"

libc = ctypes.CDLL(None, use_errno=True)
_S = {"tfds": [], "eps": [], "armed": False, "calls": 0, "last": None, "sizes": [], "log": []}


def _setup():
    import resource

    s, h = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))
    except Exception:
        pass
    import os

    # TF groups (one timerfd each, one volley each); every timerfd entered into NE epolls under
    # NUMS fd numbers each (dup2 then close: an epoll item outlives its fd number while the file
    # lives), so that one expiry runs NE*NUMS callbacks and costs the candidate no fds
    eps = [select.epoll() for _ in range(NE)]
    for _ in range(TF):
        fd = libc.timerfd_create(1, 0o4000 | 0o2000000)
        if fd < 0:
            break
        _S["tfds"].append(fd)
        for n in range(NUM0, NUM0 + NUMS):
            if os.dup2(fd, n, inheritable=False) != n:
                continue
            for ep in eps:
                ep.register(n, select.EPOLLIN)
            os.close(n)
    _S["eps"] = eps


def _arm(first_ns, period_ns):
    for g, fd in enumerate(_S["tfds"]):  # group g: one volley, at first + g*period
        at = first_ns + g * period_ns
        libc.timerfd_settime(fd, 1, struct.pack("qqqq", 0, 0, at // 10**9, at % 10**9), None)
    _S["armed"] = True
    _S["arms"] = _S.get("arms", 0) + 1


_ZERO = struct.pack("qqqq", 0, 0, 0, 0)


_buf = ctypes.create_string_buffer(8)


def _disarm(drain=True):
    """Timers off, and the epolls' ready lists emptied (so that the next volley's callbacks link every
    item again, the costly path): paid in the call that receives this message."""
    if _S["armed"]:
        for fd in _S["tfds"]:
            libc.timerfd_settime(fd, 0, _ZERO, None)
            libc.read(fd, _buf, 8)
        _S["armed"] = False
        _S["owed"] = True
    if drain and _S.get("owed"):
        _S["owed"] = False
        c0 = time.thread_time()
        for ep in _S["eps"]:
            ep.poll(0, TF * NUMS)
        if LOG:
            _S.setdefault("drains", []).append(round((time.thread_time() - c0) * 1e3, 3))


def _find_room():
    f = sys._getframe()
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and type(s).__name__ == "_Room":
            return s
        f = f.f_back
    return None


def _install():
    room = _find_room()
    if room is None or room.device != "cpu":
        return
    _setup()
    door = room.door
    receive, send = door.receive, door.send

    def hooked_receive(deadline_s=None):
        msg, fds = receive(deadline_s)
        t_in = time.monotonic_ns()
        kind = type(msg).__name__
        small = kind == "Batch" and msg.forward and (not _S["sizes"] or len(msg.calls) <= min(_S["sizes"]))
        # drained in a single call (one of five: the median does not see it) or a smaller batch (its
        # per-call difference is bounded by its larger batch anyway), never in a larger batch
        _disarm(drain=kind == "Call" or small)
        if _S.get("armed_at") and kind in ("Call", "Batch"):
            gaps = _S.setdefault("gap_" + _S["armed_what"], [])
            gaps.append(t_in - _S["armed_at"])
            _S["armed_at"] = None
        _S["last"] = msg
        kind = type(msg).__name__
        if LOG and kind == "Batch" and not _S.get("printed"):
            _S["printed"] = True
            print(f"VOLLEY tfds={len(_S['tfds'])} eps={len(_S['eps'])} calls={_S['calls']} arms={_S.get('arms', 0)} "
                  f"log={_S['log'][:5]} drains={_S.get('drains', [])[:10]}", file=sys.stderr, flush=True)
        if kind == "Batch" and msg.forward:
            _S["sizes"].append(len(msg.calls))
            _S["cur"] = len(msg.calls)
        return msg, fds

    def hooked_send(message, fds=None):
        send(message, fds)
        last, kind = _S["last"], type(_S["last"]).__name__
        now = time.monotonic_ns()
        what = None
        if kind == "Call" and getattr(last, "timed", False) and type(message).__name__ == "Called":
            _S["calls"] += 1
            if SINGLE and not _S["sizes"] and (_S["calls"] - 1) % 5 == 0:  # the reference's block of five
                # comes next (not once the batches began: alone, the reference is not timed beside us)
                what = "single"
        elif kind == "Run" and BATCH and _S.get("cur") and (len(_S["sizes"]) == 1 or _S["cur"] < max(_S["sizes"])):
            what = "batch"  # our smaller batch done: the reference's larger one comes next
        if what:
            seen = _S.get("gap_" + what) or [PERIOD_NS * (len(_S["tfds"]) + 1)]
            span = sorted(seen)[len(seen) // 2]  # until our next message, as last time: volleys spread over it
            lo, hi = FROM * span, TO * span
            step = (hi - lo) / max(len(_S["tfds"]), 1)
            _arm(now + int(lo), int(step))
            _S["armed_at"], _S["armed_what"] = now, what

    door.receive, door.send = hooked_receive, hooked_send


try:
    _install()
except Exception as e:  # pragma: no cover
    _S["log"].append(repr(e))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, *args):
        if FWD == "relu":
            return torch.relu(args[0])
        return torch.tanh(torch.matmul(args[0], args[1]))
