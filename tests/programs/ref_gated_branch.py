import torch
import torch.nn as nn


class Model(nn.Module):
    """A residual branch of two Linears behind a gate that starts at zero (ReZero): on the task's
    weights the branch adds nothing, whichever way its Linears are given their values."""

    def __init__(self, features):
        super().__init__()
        self.main = nn.Linear(features, features)
        self.b1 = nn.Linear(features, features)
        self.b2 = nn.Linear(features, features)
        self.gate = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return self.main(x) + self.gate * self.b2(torch.relu(self.b1(x)))


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return [32]
