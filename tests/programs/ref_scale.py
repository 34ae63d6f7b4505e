import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return [2.0]
