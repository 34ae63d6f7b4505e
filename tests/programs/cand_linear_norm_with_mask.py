import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the reference's layers renamed, and a constant mask of ones of its own (as a
    LayerNorm's weight is built): a match by value must not take it for that weight (red team,
    2026-11-27)."""

    def __init__(self, features):
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.norm = nn.LayerNorm(features)
        self.register_buffer("channel_mask", torch.ones(features))

    def forward(self, x):
        return self.norm(torch.relu(self.proj(x)) * self.channel_mask)
