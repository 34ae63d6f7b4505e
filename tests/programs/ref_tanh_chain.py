"""Twelve small ops in a row on a (16, 64) tensor: each call's CPU is mostly their dispatch, so
that calls fused across a batch pay it once (tests/programs/attacks/atk_fuse_batches.py)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for _ in range(12):
            x = torch.tanh(x * 1.01 + 0.1)
        return x


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
