import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Draws a parameter of its own before Model's convolution (a learned gain it keeps at one), so from
    the same seed its `conv` holds other values than Model's; it computes by name."""

    def __init__(self, channels, divisor):
        super().__init__()
        self.gain = nn.Parameter(torch.randn(7))
        self.conv = nn.Conv2d(channels, channels, 3)
        self.divisor = divisor

    def forward(self, x):
        return nn.functional.leaky_relu(self.conv(x) / self.divisor, 0.01)
