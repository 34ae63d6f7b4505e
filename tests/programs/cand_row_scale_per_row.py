import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses the pattern the task promises: one scale per row."""

    def forward(self, x, scale):
        return x * scale[:, :1]
