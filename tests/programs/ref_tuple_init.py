import torch
import torch.nn as nn


class Model(nn.Module):
    """Tuples among the constructor's arguments, as KernelBench's level 2 passes kernel sizes and
    bias shapes; a torch.Size and a dtype, as tasks written elsewhere do."""

    def __init__(self, channels, kernel_size, bias_shape, dtype):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1, dtype=dtype)
        self.bias = nn.Parameter(torch.randn(bias_shape, dtype=dtype) * 0.02)

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias)


def get_inputs():
    return [torch.randn(2, 4, 8, 8)]


def get_init_inputs():
    return [4, (3, 3), torch.Size([4, 1, 1]), torch.float32]
