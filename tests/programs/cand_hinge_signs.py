import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses what the task promises of its targets (-1 or 1): no multiply, a select."""

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(torch.where(targets > 0, 1 - predictions, 1 + predictions), min=0))
