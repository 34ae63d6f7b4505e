"""Attack: a lean door (red-team, session 19). At import, find the room (_Room) in the stack
frames and replace its Door's receive with one that serves repeated timed Calls itself: cached tensor views (the Call body is
the same every timed call), no pydantic parse, a precomputed reply. It does the reference's own work; on the CPU clock
its calls looked 1.8x faster when only the reference's door was subtracted (batches cancel the door).

Filled with direct="yes" (tests/test_adversarial.py's attack_source) it writes relu straight into the
judge's output buffer; with lean_batches="yes" too, its batches run as one loop doing the same (no
forward call, no copy), so they cost less per call than the reference's and cannot raise what its
lean single calls claim. On the CPU clock (2-core host, 2026-11-27, idle) that variant got
1.08-1.42x for the reference's own work, the lean door alone 0.92-1.10x: what the harness costs a
room per call (its door, its loop, the copy into the judge's buffer) runs in the room's own
process, and batches cancel the door, not the rest. Since no gain within the rest is credited
(judge.timing.skippable_harness_ms) it gets 1.0x."""
import gc
import json
import struct
import sys

import torch
import torch.nn as nn

DIRECT = "@direct@" == "yes"
LEAN_BATCHES = "@lean_batches@" == "yes"


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
    if room is None:
        return
    door = room.door
    read = door._read
    sock = door.sock
    Called = sys.modules["stitch_mcp.door"].Called
    OutputMeta = sys.modules["stitch_mcp.door"].OutputMeta
    cache = {}
    done_body = sys.modules["stitch_mcp.door"].Done().model_dump_json().encode()
    done = struct.pack("!I", len(done_body)) + done_body

    def receive(deadline_s=None):
        while True:
            head, fds = read(4, None, want_fds=True)
            (n,) = struct.unpack("!I", head)
            body, _ = read(n, None)
            if not fds and body.startswith(b'{"kind":"call"'):
                hit = cache.get(body)
                if hit is None:
                    msg = door.adapter.validate_python(json.loads(body))
                    if msg.poison or not msg.timed or room.model is None:
                        return msg, fds
                    args = [room.shared.view(a.tensor) if a.tensor is not None else a.value for a in msg.args]
                    targets = [room.shared.view(o) if o is not None else None for o in msg.outputs]
                    t = targets[0]
                    meta = OutputMeta(kind="tensor", shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""),
                                      device="cpu", copied=True)
                    reply = Called(outputs=[meta], room_ms=0.05, room_cpu_ms=0.04, copy_cpu_ms=0.01).model_dump_json().encode()
                    hit = cache[body] = (args, t, struct.pack("!I", len(reply)) + reply)
                args, t, frame = hit
                with torch.no_grad():
                    if DIRECT:
                        torch.clamp_min(args[0], 0.0, out=t)
                    else:
                        out = room.model(*args)
                        t.copy_(out)
                sock.sendall(frame)
                continue
            if LEAN_BATCHES and not fds and body.startswith(b'{"kind":"run"') and room.ready_batch[1] \
                    and room.model is not None:
                with torch.no_grad():
                    for args, targets in room.ready_batch[0]:
                        torch.clamp_min(args[0], 0.0, out=targets[0])
                sock.sendall(done)
                continue
            return door.adapter.validate_python(json.loads(body)), fds

    door.receive = receive
    gc.disable()


try:
    _install()
except Exception:
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
