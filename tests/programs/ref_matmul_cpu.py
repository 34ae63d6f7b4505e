import torch
import torch.nn as nn


class Model(nn.Module):
    """A few milliseconds of one core's work: long enough for threads on other cores to pay."""

    def forward(self, a, b):
        return torch.tanh(a @ b)


def get_inputs():
    return [torch.randn(768, 768), torch.randn(768, 768)]


def get_init_inputs():
    return []
