import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The normalisation written out: its mean is rounding noise of its own."""

    def __init__(self, features):
        super().__init__()
        self.eps = 1e-5

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        y = centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps)
        return y, y.mean(-1)
