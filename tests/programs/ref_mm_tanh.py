"""A CPU task whose calls take about a millisecond of compute (matmul, then tanh): timing
repeatability beside a busy host (tools/bench_suite.py's repeat part)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.tanh(torch.matmul(a, b))


def get_inputs():
    return [torch.randn(256, 512), torch.randn(512, 256)]


def get_init_inputs():
    return []
