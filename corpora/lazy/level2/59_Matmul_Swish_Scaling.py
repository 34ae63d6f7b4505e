# style: 6 — torch.cuda.jiterator._create_jit_fn created at construction (NVRTC-compiled on the first call)
# nn.Linear (self.matmul) stays in PyTorch; (x * sigmoid(x)) * scaling_factor is one jiterator kernel.
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l2_59_swish_scale(T x, T scale) {
    float v = (float)x;
    float sig = 1.0f / (1.0f + expf(-v));
    return (T)((v * sig) * (float)scale);
}
"""


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self._epilogue = _create_jit_fn(_CODE, scale=1.0)

    def forward(self, x):
        x = self.matmul(x)
        return self._epilogue(x.detach(), scale=float(self.scaling_factor))
