import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden, extra):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
