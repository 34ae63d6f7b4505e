import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The reference's Linear built from the same seed, its weights kept outside the module (a plain
    list): state_dict() is empty, so weights loaded into it would not reach what it computes (red
    team, 2026-11-27)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        built = nn.Linear(in_features, out_features)
        self._w = [built.weight.detach().clone(), built.bias.detach().clone()]

    def forward(self, x):
        w, b = self._w
        return torch.relu(x @ w.t() + b)
