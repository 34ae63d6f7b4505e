import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench's hinge loss (level 1, 100): targets of -1 and 1."""

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    return [torch.rand(128, 8), torch.randint(0, 2, (128, 1)).float() * 2 - 1]


def get_init_inputs():
    return []
