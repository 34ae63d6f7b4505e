"""Attack: calls fused across a batch, single calls through a lean door (red team, session 24).
A room sees all of a batch's inputs before it is told to run it: at Batch it keeps views of every
call's input and output, and at Run it does the whole batch as one forward over their
concatenation, each slice copied out (every output right). Per call the reference's twelve small
ops on a (16, 64) tensor are mostly dispatch, which the fused batch pays once. With lean_calls="yes"
it also answers timed single calls itself, as atk_lean_door does (the Call parsed once, the
reference's work written straight into the judge's buffer, a reply built ahead), so that its single
calls, less the reference's door, look faster too. Each half alone ended at or below honest; both
together got 1.68-1.75x with the reference's own work on the CPU clock (2-core host, 2026-11-27),
the batches carried over up to 1.1x a single-call speedup the lean door inflated, until no gain in
single calls was credited within the reference's door and harness there. @lean_calls@=yes|no,
@fuse@=yes|no."""
import gc
import json
import struct
import sys

import torch
import torch.nn as nn

LEAN_CALLS = "@lean_calls@" == "yes"
FUSE = "@fuse@" == "yes"


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
    door = room.door
    read = door._read
    sock = door.sock
    D = sys.modules["stitch_mcp.door"]
    cache, bcache = {}, {}
    done_body = D.Done().model_dump_json().encode()
    done = struct.pack("!I", len(done_body)) + done_body
    state = {"batch": None}

    def receive(deadline_s=None):
        while True:
            head, fds = read(4, None, want_fds=True)
            (n,) = struct.unpack("!I", head)
            body, _ = read(n, None)
            if LEAN_CALLS and not fds and body.startswith(b'{"kind":"call"'):
                hit = cache.get(body)
                if hit is None:
                    msg = door.adapter.validate_python(json.loads(body))
                    if msg.poison or not msg.timed or room.model is None:
                        return msg, fds
                    x = room.shared.view(msg.args[0].tensor)
                    t = room.shared.view(msg.outputs[0])
                    meta = D.OutputMeta(kind="tensor", shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""),
                                        device="cpu", copied=True)
                    reply = D.Called(outputs=[meta], room_ms=0.05, room_cpu_ms=0.04,
                                     copy_cpu_ms=0.01).model_dump_json().encode()
                    hit = cache[body] = (x, t, struct.pack("!I", len(reply)) + reply)
                x, t, frame = hit
                with torch.no_grad():
                    t.copy_(_chain(x))
                sock.sendall(frame)
                continue
            if FUSE and not fds and body.startswith(b'{"kind":"batch"') and room.model is not None:
                hit = bcache.get(body)
                if hit is None:
                    msg = door.adapter.validate_python(json.loads(body))
                    if not msg.forward:
                        return msg, fds
                    view = room.shared.view
                    xs = [view(c.args[0].tensor) for c in msg.calls]
                    os_ = [view(c.outputs[0]) for c in msg.calls]
                    hit = bcache[body] = (xs, os_, xs[0].shape[0])
                state["batch"] = hit
                sock.sendall(done)
                continue
            if FUSE and not fds and body.startswith(b'{"kind":"run"') and state["batch"] is not None:
                xs, os_, r = state["batch"]
                with torch.no_grad():
                    y = _chain(torch.cat(xs))
                    for i, o in enumerate(os_):
                        o.copy_(y[i * r:(i + 1) * r])
                state["batch"] = None
                sock.sendall(done)
                continue
            return door.adapter.validate_python(json.loads(body)), fds

    door.receive = receive
    gc.disable()


try:
    _install()
except Exception:
    pass


def _chain(x):
    for _ in range(12):
        x = torch.tanh(x * 1.01 + 0.1)
    return x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _chain(x)
