# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# nn.Linear (self.linear) stays in PyTorch; mish(mish(x)) is one Triton pass.
# mish(v) = v * tanh(softplus(v)), softplus = log1p(exp(v)) (no threshold, as PyTorch's mish);
# softplus >= 0, so tanh(s) = (1 - e^{-2s}) / (1 + e^{-2s}), with the Taylor series for small s.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l2_29_mish(v):
    # softplus = log1p(exp(v)); log1p(u) = log(w) * u / (w - 1) with w = 1 + u keeps the small-u bits;
    # above 20, log1p(exp(v)) == v to fp32 precision (and exp would overflow further on)
    u = tl.exp(tl.minimum(v, 20.0))
    w = 1.0 + u
    d = w - 1.0
    sp = tl.where(d == 0.0, u, tl.log(w) * (u / d))
    sp = tl.where(v > 20.0, v, sp)
    t = tl.exp(-2.0 * sp)
    big = (1.0 - t) / (1.0 + t)
    s2 = sp * sp
    small = sp * (1.0 + s2 * (-0.3333333333333333 + s2 * (0.13333333333333333 + s2 * -0.05396825396825397)))
    return v * tl.where(sp < 0.1, small, big)


@triton.jit
def _lz_l2_29_mish_mish_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, _lz_l2_29_mish(_lz_l2_29_mish(x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        BLOCK = 1024
        _lz_l2_29_mish_mish_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=4)
        return y
