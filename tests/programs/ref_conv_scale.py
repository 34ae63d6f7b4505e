import torch
import torch.nn as nn


class Model(nn.Module):
    """A convolution divided by a constant, then LeakyReLU (KernelBench's level 2 style)."""

    def __init__(self, channels, divisor):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3)
        self.divisor = divisor

    def forward(self, x):
        return nn.functional.leaky_relu(self.conv(x) / self.divisor, 0.01)


def get_inputs():
    return [torch.randn(2, 4, 10, 10)]


def get_init_inputs():
    return [4, 2.0]
