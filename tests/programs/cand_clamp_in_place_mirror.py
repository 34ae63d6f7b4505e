import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Clamps its input in place as the reference does."""

    def forward(self, x):
        return x.clamp_(-6.0, 6.0).mul(2)
