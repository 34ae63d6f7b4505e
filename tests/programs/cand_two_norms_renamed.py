import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    """Honest: the reference's layers under other names, in the order it builds them."""

    def __init__(self, features):
        super().__init__()
        self.first = nn.LayerNorm(features)
        self.proj = nn.Linear(features, features)
        self.second = nn.LayerNorm(features)

    def forward(self, x):
        h = F.layer_norm(x, x.shape[-1:], self.first.weight, self.first.bias, self.first.eps)
        h = torch.relu(F.linear(h, self.proj.weight, self.proj.bias))
        return F.layer_norm(h, h.shape[-1:], self.second.weight, self.second.bias, self.second.eps)
