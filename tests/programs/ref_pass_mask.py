import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales its input by a mask and passes the mask through as a second output (the input itself)."""

    def forward(self, x, mask):
        return x * mask, mask


def get_inputs():
    return [torch.randn(16, 32), torch.rand(16, 32)]


def get_init_inputs():
    return []
