import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right formula, but its operands are rounded to float16 before a float32 matmul: errors of
    ~1e-3 of the output's magnitude (a precision bug: beyond atol=rtol=1e-4, within 1e-2)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.linear.weight.half().float()
        return torch.relu(x.half().float() @ w.t() + self.linear.bias)
