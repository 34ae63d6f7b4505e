import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Folds the divisor into the convolution on every call, from the parameters as Model holds them."""

    def __init__(self, channels, divisor):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3)
        self.scale = 1.0 / divisor

    def forward(self, x):
        y = nn.functional.conv2d(x, self.conv.weight * self.scale, self.conv.bias * self.scale)
        return nn.functional.leaky_relu(y, 0.01)
