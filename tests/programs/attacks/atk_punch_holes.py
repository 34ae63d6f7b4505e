"""Attack: take away the pages of the batch output buffers while the reference's room runs, so that
every call of its batches faults them in again. At import it finds the room (_Room) and its serve
loop's handlers in the stack frames, notes which shared regions its batches write outputs into, and
starts a thread that, once the room has not been asked anything for a while (the reference's turn),
punches holes in those regions (fallocate PUNCH_HOLE on the region's memfd, which sealing allows)
a few times, whenever their pages are back. It does the reference's own work, and its own single
calls' buffers are left alone. Where both rooms map the same batch buffers, the reference's
batches pay for the faults; where each room has its own, only this room's do. A room whose
internals it cannot find fails its check (it would otherwise pass without attacking)."""
import ctypes
import ctypes.util
import mmap
import sys
import threading
import time

import torch
import torch.nn as nn

QUIET_S = 0.001  # this long after the room's last call, the judge is busy with the reference's room
PUNCHES, GAP_S = 8, 0.0003  # punches per quiet spell, about one reference call apart
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_PUNCH = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE


def _find_room():
    """The room and its serve loop's handlers (by message type)."""
    f = sys._getframe()
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and type(s).__name__ == "_Room" and "handlers" in f.f_locals:
            return s, f.f_locals["handlers"]
        f = f.f_back
    return None, None


def _present(mapped) -> bool:
    """Whether the first page of a region is in memory (mincore on the room's own mapping)."""
    addr = ctypes.addressof(ctypes.c_char.from_buffer(mapped.mm))
    vec = ctypes.create_string_buffer(1)
    return _libc.mincore(addr, mmap.PAGESIZE, vec) == 0 and vec.raw[0] & 1


def _install():
    room, handlers = _find_room()
    if room is None:
        return False
    outputs: set[int] = set()
    state = {"busy": False, "last": time.monotonic()}
    kinds = {m.__name__: m for m in handlers}

    def wrapped(fn, note):
        def inner(message, fds):
            state["busy"] = True
            try:
                note(message)
                return fn(message, fds)
            finally:
                state["busy"], state["last"] = False, time.monotonic()
        return inner

    notes = {"Call": lambda m: None, "Run": lambda m: None,
             "Batch": lambda m: outputs.update(o.region for c in m.calls for o in c.outputs if o is not None)}
    for name, note in notes.items():
        handlers[kinds[name]] = wrapped(handlers[kinds[name]], note)

    def punch():
        """After each quiet spell begins, a few punches a reference's call apart: little CPU of its
        own (a room that works while not asked is charged for it), every page faulted in again."""
        seen = None
        while True:
            time.sleep(QUIET_S)
            if state["busy"] or state["last"] == seen or time.monotonic() - state["last"] < QUIET_S:
                continue
            seen = state["last"]
            for _ in range(PUNCHES):
                if state["busy"]:
                    break
                for index in list(outputs):
                    if index < len(room.shared.mapped):
                        mapped = room.shared.mapped[index]
                        if mapped.size and _present(mapped):
                            _libc.fallocate(mapped.fd, _PUNCH, 0, mapped.size)
                time.sleep(GAP_S)

    threading.Thread(target=punch, daemon=True).start()
    return True


INSTALLED = False
try:
    INSTALLED = _install()
except Exception:
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not INSTALLED and x.device.type != "meta":  # meta: the build stage's rehearsal, not a room call
            raise RuntimeError("attack: the room's internals were not found")
        return torch.relu(x)
