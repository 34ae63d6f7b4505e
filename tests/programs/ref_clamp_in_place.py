import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps its input in place, then doubles it: on the task's inputs (randn) the clamp never bites,
    so its first call leaves them as they were."""

    def forward(self, x):
        x.clamp_(-6.0, 6.0)
        return x * 2


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
