# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# torch.cumsum along self.dim (moved last): a program per row scans the row in BLOCK chunks with
# tl.cumsum and carries the running total from chunk to chunk.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l1_89_cumsum_kernel(x_ptr, y_ptr, L, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * L
    y_row = y_ptr + row * L
    cols = tl.arange(0, BLOCK)
    carry = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0)
    for start in range(0, L, BLOCK):
        idx = start + cols
        mask = idx < L
        x = tl.load(x_row + idx, mask=mask, other=0.0)
        tl.store(y_row + idx, tl.cumsum(x, axis=0) + carry, mask=mask)
        carry += tl.sum(x, axis=0)


def _cumsum_last(x):
    xc = x.contiguous()
    y = torch.empty_like(xc)
    L = xc.shape[-1] if xc.dim() > 0 else 1
    if xc.numel() == 0:
        return y
    rows = xc.numel() // L
    BLOCK = min(2048, triton.next_power_of_2(L))
    _lz_l1_89_cumsum_kernel[(rows,)](xc, y, L, BLOCK=BLOCK, num_warps=8)
    return y


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim % x.dim()
        if dim == x.dim() - 1:
            return _cumsum_last(x)
        return _cumsum_last(x.movedim(dim, -1)).movedim(-1, dim).contiguous()
