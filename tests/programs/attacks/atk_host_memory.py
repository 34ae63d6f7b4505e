"""Attack: take the host's memory. With no cap a room took a 24 GB host down to its last 300 MB in
31 s (red team, 2026-11-28): that starves the server and the other checks, and drops the page cache
every room shares. Each call allocates @GB@ GB and writes every page of it before doing the work."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        hog = torch.ones(int(@GB@ * 2 ** 30) // 4)  # written: resident, not only reserved
        return torch.relu(x) + float(hog[0]) * 0
