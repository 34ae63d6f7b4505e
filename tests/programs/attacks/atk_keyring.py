"""Probe: can a room leave state for the rooms after it in the kernel's keyrings? Keyrings belong
to a uid, and a room runs as its slot's uid, so a key added to the user keyring outlived the room
and the next check on that slot read it (red team, 2026-11-28). At import it tries to add one and to
read back any key an earlier room left. Where the kernel took the key, or gave one back, forward
returns its input unchanged (wrong wherever it is negative): the check passes only where every
key call was refused. Any other answer than EPERM (the rooms' syscall filter) fails the import."""
import ctypes
import platform

import torch
import torch.nn as nn

_NR = {"x86_64": (248, 249), "aarch64": (217, 218)}[platform.machine()]  # add_key, request_key
_USER_KEYRING = -4  # KEY_SPEC_USER_KEYRING
_EPERM = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _call(nr: int, *args) -> int:
    got = _libc.syscall(nr, *args)
    if got < 0 and ctypes.get_errno() != _EPERM:
        raise RuntimeError(f"probe: key call {nr} failed with errno {ctypes.get_errno()}, not EPERM")
    return got


_left = _call(_NR[1], b"user", b"stitch-keyring-probe", None, 0) >= 0
_kept = _call(_NR[0], b"user", b"stitch-keyring-probe", b"left by an earlier room", 23, _USER_KEYRING) >= 0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clone() if _left or _kept else torch.relu(x)
