import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """An attack on matching by value over names: its `fc1` is Model's and computes; Model's second
    Linear, built from the same seed, it keeps out of its state_dict (a plain list), frozen; its
    registered `fc2` is a copy of `fc1`. If the judge took that copy for a move of `fc1`, Model's
    `fc2` would be held by nothing and keep the task's values in the trial with re-initialised
    weights, where this candidate's frozen copy is right."""

    def __init__(self, features):
        super().__init__()
        self.fc1 = nn.Linear(features, features)
        hidden = nn.Linear(features, features)
        self.fc2 = nn.Linear(features, features)
        with torch.no_grad():
            self.fc2.weight.copy_(self.fc1.weight)
            self.fc2.bias.copy_(self.fc1.bias)
        self._frozen = [hidden.weight.detach().clone(), hidden.bias.detach().clone()]

    def forward(self, x):
        w2, b2 = self._frozen
        return torch.relu(self.fc1(x)) @ w2.t() + b2
