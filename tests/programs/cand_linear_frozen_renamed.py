import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """cand_linear_frozen with its Linear named `fc` (the reference's is `linear`): no name to share
    re-initialised weights by, only the values it was built with (red team, 2026-11-27)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.frozen_w = None

    def forward(self, x):
        if self.frozen_w is None:
            self.frozen_w = self.fc.weight.detach().clone()
            self.frozen_b = self.fc.bias.detach().clone()
        return torch.relu(x @ self.frozen_w.t() + self.frozen_b)
