import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench's lower triangular matmul (level 1, 15): A and B lower triangular."""

    def forward(self, A, B):
        return torch.tril(torch.matmul(A, B))


def get_inputs():
    return [torch.tril(torch.rand(48, 48)), torch.tril(torch.rand(48, 48))]


def get_init_inputs():
    return []
