import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a dropout mask given as an input: 0 or 1/(1-p)."""

    def forward(self, x, mask):
        return x * mask


def get_inputs():
    return [torch.randn(32, 64), (torch.rand(32, 64) > 0.2).float() / 0.8]


def get_init_inputs():
    return []
