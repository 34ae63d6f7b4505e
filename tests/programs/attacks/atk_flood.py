"""Attack: a huge output (stdout and stderr, 64 MB) from forward, to exhaust the judge's memory or log."""
import os
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        line = b"A" * 65535 + b"\n"
        for _ in range(1024):
            os.write(1, line)
            os.write(2, line)
        return torch.relu(x)
