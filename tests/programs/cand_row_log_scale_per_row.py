import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses the pattern the task promises: one exp per row."""

    def forward(self, x, log_scale):
        return x * torch.exp(log_scale[:, :1])
