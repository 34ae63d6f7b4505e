# style: 6 — torch.cuda.jiterator._create_jit_fn created on the first call (NVRTC-compiled then)
# nn.Linear (self.gemm) stays in PyTorch; sigmoid(x) * scaling_factor + x is one jiterator kernel.
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l2_70_sigmoid_scale_residual(T x, T scale) {
    float v = (float)x;
    float sig = 1.0f / (1.0f + expf(-v));
    return (T)(sig * (float)scale + v);
}
"""

_fn = None


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        global _fn
        if _fn is None:
            _fn = _create_jit_fn(_CODE, scale=1.0)
        x = self.gemm(x)
        return _fn(x.detach(), scale=float(self.scaling_factor))
