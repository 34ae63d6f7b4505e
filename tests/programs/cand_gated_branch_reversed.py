import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The branch's Linears built the other way round and applied by name: right with Model's weights
    by name, which only the trial with re-initialised weights (the gate no longer zero) tells apart."""

    def __init__(self, features):
        super().__init__()
        self.main = nn.Linear(features, features)
        self.b2 = nn.Linear(features, features)
        self.b1 = nn.Linear(features, features)
        self.gate = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        branch = torch.addmm(self.b2.bias, torch.relu(torch.addmm(self.b1.bias, x, self.b1.weight.t())), self.b2.weight.t())
        return torch.addmm(self.main.bias, x, self.main.weight.t()) + self.gate * branch
