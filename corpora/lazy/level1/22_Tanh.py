# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# tanh elementwise: |x| < 0.1 uses the odd Taylor series (no cancellation near 0), otherwise
# (1 - e^{-2|x|}) / (1 + e^{-2|x|}); the sign is put back. 64-bit offsets.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l1_22_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = tl.abs(x)
    t = tl.exp(-2.0 * a)
    big = (1.0 - t) / (1.0 + t)
    a2 = a * a
    small = a * (1.0 + a2 * (-0.3333333333333333 + a2 * (0.13333333333333333 + a2 * -0.05396825396825397)))
    r = tl.where(a < 0.1, small, big)
    y = tl.where(x < 0, -r, r)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        xc = x.contiguous()
        y = torch.empty_like(xc)
        n = xc.numel()
        if n == 0:
            return y
        BLOCK = 1024
        _lz_l1_22_tanh_kernel[(triton.cdiv(n, BLOCK),)](xc, y, n, BLOCK=BLOCK, num_warps=4)
        return y
