"""An honest candidate that checks a helper with a multiprocessing pool of each start method in
its constructor, each closed: Python keeps its resource tracker and fork server running after."""
import multiprocessing as mp

import torch.nn as nn


def _square(v):
    return v * v


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        with mp.get_context("spawn").Pool(1) as pool:
            assert pool.map(_square, [1, 2, 3]) == [1, 4, 9]
        with mp.get_context("forkserver").Pool(1) as pool:
            assert pool.map(_square, [2]) == [4]

    def forward(self, x):
        return x.clamp_min(0)
