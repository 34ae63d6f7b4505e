# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# Softmax over dim 1 of (N, D): a program per row; pass 1 keeps an online (max, rescaled sum) per
# lane over the row's chunks and merges the lanes; pass 2 writes exp(x - max) / sum.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l1_23_softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        x = tl.load(x_row + idx, mask=idx < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        seen = m_new != float("-inf")  # lanes that have seen only -inf keep s = 0
        s = s * tl.where(seen, tl.exp(m - m_new), 0.0) + tl.where(seen, tl.exp(x - m_new), 0.0)
        m = m_new
    m_row = tl.max(m, axis=0)
    s_row = tl.sum(s * tl.where(m != float("-inf"), tl.exp(m - m_row), 0.0), axis=0)
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        mask = idx < n_cols
        x = tl.load(x_row + idx, mask=mask, other=0.0)
        tl.store(y_row + idx, tl.exp(x - m_row) / s_row, mask=mask)


def _softmax_last(x):
    xc = x.contiguous()
    y = torch.empty_like(xc)
    n_cols = xc.shape[-1]
    if xc.numel() == 0:
        return y
    rows = xc.numel() // n_cols
    BLOCK = min(4096, triton.next_power_of_2(n_cols))
    _lz_l1_23_softmax_kernel[(rows,)](xc, y, n_cols, BLOCK=BLOCK, num_warps=8)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        dim = 1 % x.dim()
        if dim == x.dim() - 1:
            return _softmax_last(x)
        return _softmax_last(x.movedim(dim, -1)).movedim(-1, dim).contiguous()
