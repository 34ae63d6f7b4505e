import torch
import torch.nn as nn
import definitely_not_a_module  # noqa: F401


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
