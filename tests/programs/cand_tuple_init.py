import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    """Uses its tuple arguments as tuples: it concatenates one and checks the other's type."""

    def __init__(self, channels, kernel_size, bias_shape):
        super().__init__()
        if not isinstance(kernel_size, tuple):
            raise TypeError(f"kernel_size should be a tuple, got {type(kernel_size).__name__}")
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)
        self.flat_bias_shape = (1,) + bias_shape

    def forward(self, x):
        return F.relu(self.conv(x) + self.bias.view(self.flat_bias_shape))
