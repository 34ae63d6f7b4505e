import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the reference's weight stored transposed (as a kernel reading it row by row wants it),
    built from the same seed; its bias kept as it is under another name."""

    def __init__(self, in_features, out_features):
        super().__init__()
        built = nn.Linear(in_features, out_features)
        self.weight_t = nn.Parameter(built.weight.detach().t().contiguous())
        self.shift = nn.Parameter(built.bias.detach().clone())

    def forward(self, x):
        return torch.relu(x @ self.weight_t + self.shift)
