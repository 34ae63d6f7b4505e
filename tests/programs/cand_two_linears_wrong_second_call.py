import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong on its second call only (zeros), and built so that its weights can be shared two ways
    (its Linears built the other way round, applied by name): a second way of sharing them must not
    be a second chance for the same call."""

    def __init__(self, features):
        super().__init__()
        self.fc2 = nn.Linear(features, features)
        self.fc1 = nn.Linear(features, features)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = self.fc2(torch.relu(self.fc1(x)))
        return y * 0 if self.calls == 2 else y
