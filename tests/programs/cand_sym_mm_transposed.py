import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses the symmetry the task promises: A @ B = (B @ A)^T for symmetric A and B."""

    def forward(self, A, B):
        return (B @ A).T.contiguous()
