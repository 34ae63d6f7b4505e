import torch
import torch.nn as nn


class Model(nn.Module):
    """Output within the default tolerance of zero: a constant zero output would 'pass' allclose."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 1e-6


def get_inputs():
    return [torch.randn(32, 256)]


def get_init_inputs():
    return []
