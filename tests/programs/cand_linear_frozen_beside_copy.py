import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The reference's Linear renamed (`fc`), a second copy of its weight kept as a buffer, and the
    weight it computes with frozen at its first call: two of its tensors hold Model's weight, so a
    match by value that wants one holder found none (red team, 2026-11-27)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.register_buffer("packed", self.fc.weight.detach().clone())
        self.frozen = None

    def forward(self, x):
        if self.frozen is None:
            self.frozen = self.fc.weight.detach().clone()
        return torch.relu(x @ self.frozen.t() + self.fc.bias)
