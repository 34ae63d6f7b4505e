import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest as KernelBench builds it: the Linear named `fc2` is built first, so from the same seed it
    holds Model's `fc1`, and it is applied first. Its names and Model's agree, its values do not: a
    judge that shares weights by name alone gives it the layers the other way round (red team,
    2026-11-27)."""

    def __init__(self, features):
        super().__init__()
        self.fc2 = nn.Linear(features, features)
        self.fc1 = nn.Linear(features, features)

    def forward(self, x):
        return self.fc1(torch.relu(self.fc2(x)))
