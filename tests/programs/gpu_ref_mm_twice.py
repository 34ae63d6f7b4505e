import torch
import torch.nn as nn


class Model(nn.Module):
    """A 1024x1024 matmul done twice and averaged (exactly the matmul): a candidate doing it once is
    right and about twice as fast, in kernels of tens of microseconds on an H100."""

    def forward(self, a, b):
        return (torch.matmul(a, b) + torch.matmul(a, b)) / 2


def get_inputs():
    return [torch.randn(1024, 1024), torch.randn(1024, 1024)]


def get_init_inputs():
    return []
