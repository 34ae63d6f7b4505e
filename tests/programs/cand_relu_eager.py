"""Eager's own relu as a candidate: the same work as ref_relu.py, so an honest judge gives 1.0x
(the repeat benchmark's memory-bound pair, and a check against false 'slower' verdicts)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
