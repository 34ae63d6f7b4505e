import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Both of Model's matrices, renamed."""

    def __init__(self, features):
        super().__init__()
        self.first = nn.Parameter(torch.eye(features))
        self.second = nn.Parameter(torch.eye(features))

    def forward(self, x):
        return torch.relu(x @ self.first) @ self.second
