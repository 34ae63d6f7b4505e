"""An honest candidate for ref_mm_tanh doing the reference's own work another way (tanh in place):
its speedup should be about 1.0."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.mm(a, b).tanh_()
