import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right outputs, in a new tensor, and its input filled with NaN: the reference also writes to its
    input, but not that."""

    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        out = torch.relu(x + self.bias)
        x.fill_(float("nan"))
        return out
