"""Attack: report fake times by patching the room's clock. perf_counter advances 1 ns per read
while forward does real (slow) work, so the room's own time of every call is ~0."""
import itertools
import time

import torch
import torch.nn as nn

_tick = itertools.count()
time.perf_counter = lambda: next(_tick) * 1e-9


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        for _ in range(40):  # slow, honest work the forged clock hides
            y = torch.relu(y + 0.0)
        return y
