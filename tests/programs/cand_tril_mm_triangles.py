import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses what the task promises: only the lower triangles of A and B are read (a kernel would skip
    the blocks above the diagonal)."""

    def forward(self, A, B):
        return torch.tril(A.tril() @ B.tril())
