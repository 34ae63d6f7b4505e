import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        hog = bytearray(1 << 50)  # a petabyte: over any address-space limit
        return x + len(hog)
