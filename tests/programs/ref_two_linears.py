import torch
import torch.nn as nn


class Model(nn.Module):
    """Two Linears of one shape: a candidate can build or name them in either order."""

    def __init__(self, features):
        super().__init__()
        self.fc1 = nn.Linear(features, features)
        self.fc2 = nn.Linear(features, features)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [64]
