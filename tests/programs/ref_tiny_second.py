import torch
import torch.nn as nn


class Model(nn.Module):
    """Two outputs, the second within the default tolerance of zero (a small auxiliary term)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2, (x * x).sum(dim=-1) * 1e-7


def get_inputs():
    return [torch.randn(32, 256)]


def get_init_inputs():
    return []
