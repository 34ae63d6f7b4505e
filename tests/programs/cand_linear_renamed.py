import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the reference's Linear under another name (`fc`), built from the same seed."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(torch.addmm(self.fc.bias, x, self.fc.weight.t()))
