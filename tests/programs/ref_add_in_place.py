import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds its bias to its input in place and returns it."""

    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        x += self.bias
        return torch.relu_(x)


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return [32]
