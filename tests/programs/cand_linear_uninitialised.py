import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Its parameters under Model's names, left uninitialised (torch.empty): whatever it builds, it
    computes with the weights it is given."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Module()
        self.linear.weight = nn.Parameter(torch.empty(out_features, in_features).fill_(float("nan")))
        self.linear.bias = nn.Parameter(torch.empty(out_features).fill_(float("nan")))

    def forward(self, x):
        return torch.relu(torch.addmm(self.linear.bias, x, self.linear.weight.t()))
