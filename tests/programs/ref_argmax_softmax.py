import torch
import torch.nn as nn


class Model(nn.Module):
    """Two outputs of two dtypes: the int64 argmax first, then the float32 softmax."""

    def forward(self, x):
        return torch.argmax(x, dim=1), torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
