# style: 6 — torch.cuda.jiterator._create_jit_fn created at construction (NVRTC-compiled on the first call)
# sigmoid(x) = 1 / (1 + exp(-x)) in fp32, as PyTorch's CUDA kernel computes it.
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l1_21_sigmoid(T x) {
    float v = (float)x;
    return (T)(1.0f / (1.0f + expf(-v)));
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._sigmoid = _create_jit_fn(_CODE)

    def forward(self, x):
        return self._sigmoid(x)
