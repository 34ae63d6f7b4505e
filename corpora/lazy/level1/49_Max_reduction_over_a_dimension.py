# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# torch.max(x, dim)[0] over any one dim: x viewed as (outer, R, inner); a program owns BLOCK_I
# neighbouring inner positions of one outer index and walks R in BLOCK_R-row tiles, keeping a
# [BLOCK_R, BLOCK_I] running max that is reduced once at the end.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l1_49_max_dim_kernel(x_ptr, y_ptr, R, inner, n_iblocks, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    pid = tl.program_id(0)
    o = (pid // n_iblocks).to(tl.int64)
    ib = pid % n_iblocks
    i = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = i < inner
    base = x_ptr + o * R * inner
    acc = tl.full([BLOCK_R, BLOCK_I], float("-inf"), tl.float32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        ptrs = base + r[:, None].to(tl.int64) * inner + i[None, :]
        v = tl.load(ptrs, mask=(r[:, None] < R) & imask[None, :], other=float("-inf"))
        acc = tl.maximum(acc, v)
    tl.store(y_ptr + o * inner + i, tl.max(acc, axis=0), mask=imask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim % x.dim()
        xc = x.contiguous()
        shape = list(xc.shape)
        R = shape[dim]
        if R == 0:
            raise RuntimeError("max over an empty dimension")
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        y = torch.empty(shape[:dim] + shape[dim + 1:], dtype=xc.dtype, device=xc.device)
        if outer * inner == 0:
            return y
        BLOCK_I = min(64, triton.next_power_of_2(inner))
        BLOCK_R = max(16, 2048 // BLOCK_I)
        n_iblocks = triton.cdiv(inner, BLOCK_I)
        _lz_l1_49_max_dim_kernel[(outer * n_iblocks,)](xc, y, R, inner, n_iblocks,
                                                       BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, num_warps=4)
        return y
