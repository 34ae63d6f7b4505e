import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A Linear of Model's shape built first (a projection it keeps for later), then Model's two,
    applied by name: from the same seed its `fc1` holds Model's `fc2` and its `spare` Model's `fc1`."""

    def __init__(self, features):
        super().__init__()
        self.spare = nn.Linear(features, features)
        self.fc1 = nn.Linear(features, features)
        self.fc2 = nn.Linear(features, features)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
