import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The reference's names; its one-element gain read once and kept as a Python float: right only
    for the task's own gain (red team, 2026-11-27)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gain = nn.Parameter(torch.randn(1))
        self._g = None

    def forward(self, x):
        if self._g is None:
            self._g = float(self.gain)
        return torch.relu(self.linear(x)) * self._g
