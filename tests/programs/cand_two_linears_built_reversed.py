import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Model's two Linears built the other way round and applied by name: from the same seed its `fc1`
    holds Model's `fc2` and the reverse. KernelBench, which shares no weights, would fail it; with
    the weights shared by name it computes as Model."""

    def __init__(self, features):
        super().__init__()
        self.fc2 = nn.Linear(features, features)
        self.fc1 = nn.Linear(features, features)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
