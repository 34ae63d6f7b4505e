import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, then a learned scalar gain (a parameter of one element)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gain = nn.Parameter(torch.randn(1))

    def forward(self, x):
        return torch.relu(self.linear(x)) * self.gain


def get_inputs():
    return [torch.randn(32, 128)]


def get_init_inputs():
    return [128, 64]
