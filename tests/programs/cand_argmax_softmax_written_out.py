import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the softmax written out (exp over its sum), a rounding away from torch.softmax's."""

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return torch.argmax(x, dim=1), e / e.sum(dim=1, keepdim=True)
