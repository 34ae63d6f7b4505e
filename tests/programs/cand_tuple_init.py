import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    """Uses its arguments as what they are: it concatenates a tuple, checks the other's type, reads
    the torch.Size's element count and builds with the dtype."""

    def __init__(self, channels, kernel_size, bias_shape, dtype):
        super().__init__()
        if not isinstance(kernel_size, tuple):
            raise TypeError(f"kernel_size should be a tuple, got {type(kernel_size).__name__}")
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype should be a torch.dtype, got {type(dtype).__name__}")
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1, dtype=dtype)
        self.bias = nn.Parameter(torch.randn(bias_shape.numel(), dtype=dtype).view(bias_shape) * 0.02)
        self.flat_bias_shape = (1,) + tuple(bias_shape)

    def forward(self, x):
        return F.relu(self.conv(x) + self.bias.view(self.flat_bias_shape))
