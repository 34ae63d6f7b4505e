import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Passes the mask through as the reference does."""

    def forward(self, x, mask):
        return torch.mul(x, mask), mask
