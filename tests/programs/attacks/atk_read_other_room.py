"""Probe: does this room ever find in its output buffers what another room wrote there? Each call
looks (through the stack frames, at the room's `targets`) at the buffer its output will be copied
into and compares it with what this room last wrote there. Anything else, but the judge's poison,
came from outside: from then on it returns its input unchanged (wrong wherever the input is
negative), so a check fails wherever the rooms share buffers. It does the reference's own work."""
import sys

import torch
import torch.nn as nn

_POISON = 0x7FC0DEAD - 2 ** 32  # the judge's float32 poison, as int32
_written: dict[tuple[int, int], torch.Tensor] = {}
_seen = {"foreign": False}


def _target():
    f = sys._getframe(2)
    while f is not None:
        if type(f.f_locals.get("self")).__name__ == "_Room" and "targets" in f.f_locals:
            targets = f.f_locals["targets"]
            return targets[0] if targets else None
        f = f.f_back
    # the room's internals moved: fail the check rather than pass it without looking
    raise RuntimeError("probe: no room frame with its output targets above forward")


def _look(target: torch.Tensor, out: torch.Tensor) -> None:
    key = (target.data_ptr(), target.numel())
    last = _written.get(key)
    poisoned = bool((target.view(torch.int32) == _POISON).all())
    if last is not None and not poisoned and not torch.equal(target, last):
        _seen["foreign"] = True
    _written[key] = out.clone()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.relu(x)
        if x.device.type == "meta":  # the build stage's rehearsal: no room call, no buffers
            return out
        target = _target()
        if target is not None and target.shape == out.shape and target.dtype == torch.float32:
            _look(target, out)
        return x.clone() if _seen["foreign"] else out
