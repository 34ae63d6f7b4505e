import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.relu_()  # in place: mutates the caller's input and returns it
