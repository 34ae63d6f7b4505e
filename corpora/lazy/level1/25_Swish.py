# style: 6 — torch.cuda.jiterator._create_jit_fn created on the first call (NVRTC-compiled then)
# swish(x) = x * sigmoid(x), sigmoid as 1 / (1 + exp(-x)) in fp32.
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l1_25_swish(T x) {
    float v = (float)x;
    return (T)(v * (1.0f / (1.0f + expf(-v))));
}
"""

_fn = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        global _fn
        if _fn is None:
            _fn = _create_jit_fn(_CODE)
        return _fn(x)
