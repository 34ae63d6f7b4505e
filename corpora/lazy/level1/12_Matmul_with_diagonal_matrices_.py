# style: 6 — torch.cuda.jiterator._create_jit_fn created on the first call (NVRTC-compiled then)
# diag(A) @ B = A[:, None] * B: the jiterator kernel broadcasts the (N, 1) view of A over B's rows,
# so the N x N diagonal matrix is never formed.
import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

_CODE = """
template <typename T> T lz_l1_12_row_scale(T a, T b) {
    return a * b;
}
"""

_fn = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        global _fn
        if _fn is None:
            _fn = _create_jit_fn(_CODE)
        return _fn(A.unsqueeze(1), B)
