"""Attack: a frozen clock: every room time is exactly 0 ms (a forward that does real work)."""
import time

import torch
import torch.nn as nn

time.perf_counter = lambda: 0.0


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        for _ in range(40):
            y = torch.relu(y + 0.0)
        return y
