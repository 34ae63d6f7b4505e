"""Honest, if unusual: forward changes its input tensor's shape in place (a view op with a trailing
underscore) before computing. Every call must be handed the input in its task's shape."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.unsqueeze_(0)
        return torch.relu(x).squeeze(0)
