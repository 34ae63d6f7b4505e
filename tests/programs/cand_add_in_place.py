import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Works in place on its input, as the reference does."""

    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return x.add_(self.bias).clamp_(min=0)
