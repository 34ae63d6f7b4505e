# style: 6 — torch.cuda.jiterator._create_jit_fn created on the first call (NVRTC-compiled then)
# softsign(x) = x / (1 + |x|).
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l1_30_softsign(T x) {
    float v = (float)x;
    return (T)(v / (1.0f + fabsf(v)));
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._fn = None

    def forward(self, x):
        if self._fn is None:
            self._fn = _create_jit_fn(_CODE)
        return self._fn(x)
