import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: one renamed matrix for both of Model's, equal only as built."""

    def __init__(self, features):
        super().__init__()
        self.mix = nn.Parameter(torch.eye(features))

    def forward(self, x):
        return torch.relu(x @ self.mix) @ self.mix
