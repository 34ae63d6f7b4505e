import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Its float32 output 0.5% off (float32's strict tolerance is 1e-4; float16's is 1e-2)."""

    def forward(self, x):
        y = torch.tanh(x) * 3.0
        return y.sum(dim=1).half(), y * 1.005 + 0.004
