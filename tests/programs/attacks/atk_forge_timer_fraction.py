"""Attack: the room's clock runs at 21% speed, so every call of a short, honest forward reports a
fifth of its real time (too little for the judge's per-call bracket to see on its own)."""
import time

import torch
import torch.nn as nn

_real = time.perf_counter
_start = _real()
time.perf_counter = lambda: _start + (_real() - _start) * 0.21


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
