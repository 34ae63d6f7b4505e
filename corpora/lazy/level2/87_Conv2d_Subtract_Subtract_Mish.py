# style: 6 — torch.cuda.jiterator._create_jit_fn created at construction (NVRTC-compiled on the first call)
# nn.Conv2d (self.conv) stays in PyTorch; (x - v1) - v2 and mish are one jiterator kernel,
# mish(v) = v * tanh(log1p(exp(v))) as PyTorch computes it.
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l2_87_sub_sub_mish(T x, T s1, T s2) {
    float v = ((float)x - (float)s1) - (float)s2;
    return (T)(v * tanhf(log1pf(expf(v))));
}
"""


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, subtract_value_1, subtract_value_2):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.subtract_value_1 = subtract_value_1
        self.subtract_value_2 = subtract_value_2
        self._epilogue = _create_jit_fn(_CODE, s1=0.0, s2=0.0)

    def forward(self, x):
        x = self.conv(x)
        return self._epilogue(x.detach(), s1=float(self.subtract_value_1), s2=float(self.subtract_value_2))
