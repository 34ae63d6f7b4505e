import torch
import torch.nn as nn


class Model(nn.Module):
    """Twenty relus in a row (relu is idempotent, so one is as right): calls of a fraction of a
    millisecond on a CPU, short enough to be timed in batches as well."""

    def forward(self, x):
        for _ in range(20):
            x = torch.relu(x)
        return x


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
