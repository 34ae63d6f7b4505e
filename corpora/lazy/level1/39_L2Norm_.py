# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# x / ||x||_2 over dim 1 of (N, D): a program per row, pass 1 sums squares (per-lane fp32
# accumulators, merged once), pass 2 divides by the norm.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l1_39_l2norm_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        x = tl.load(x_row + idx, mask=idx < n_cols, other=0.0)
        acc += x * x
    norm = tl.sqrt(tl.sum(acc, axis=0))
    for start in range(0, n_cols, BLOCK):
        idx = start + cols
        mask = idx < n_cols
        x = tl.load(x_row + idx, mask=mask, other=0.0)
        tl.store(y_row + idx, x / norm, mask=mask)


def _l2_normalize_last(x):
    xc = x.contiguous()
    y = torch.empty_like(xc)
    n_cols = xc.shape[-1]
    if xc.numel() == 0:
        return y
    rows = xc.numel() // n_cols
    BLOCK = min(4096, triton.next_power_of_2(n_cols))
    _lz_l1_39_l2norm_kernel[(rows,)](xc, y, n_cols, BLOCK=BLOCK, num_warps=8)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        dim = 1 % x.dim()
        if dim == x.dim() - 1:
            return _l2_normalize_last(x)
        return _l2_normalize_last(x.movedim(dim, -1)).movedim(-1, dim).contiguous()
