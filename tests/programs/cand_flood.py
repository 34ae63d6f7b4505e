import sys

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            sys.stdout.write("debug " * 10000 + "\n")
