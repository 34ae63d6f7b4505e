import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses that the targets sum to one over the classes: logsumexp once, not once per class."""

    def forward(self, logits, targets):
        return (torch.logsumexp(logits, dim=1) - (targets * logits).sum(dim=1)).mean()
