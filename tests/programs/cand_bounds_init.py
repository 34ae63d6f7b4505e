import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Reads its bounds as floats."""

    def __init__(self, low, high):
        super().__init__()
        self.low, self.high = float(low), float(high)

    def forward(self, x):
        return x.clamp(min=self.low) if self.high == float("inf") else x.clamp(self.low, self.high)
