# style: 4 — Triton (@triton.jit kernel, JIT-compiled on its first launch)
# nn.Conv2d (self.conv) stays in PyTorch; x * scale_factor and the min over channels (keepdim) are
# one Triton kernel: a program per (n, block of spatial positions) walks the C channels.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l2_32_scale_chanmin_kernel(x_ptr, y_ptr, C, HW, n_sblocks, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = (pid // n_sblocks).to(tl.int64)
    sb = pid % n_sblocks
    s = sb * BLOCK + tl.arange(0, BLOCK)
    mask = s < HW
    base = x_ptr + n * C * HW
    m = tl.load(base + s, mask=mask, other=0.0) * scale
    for c in range(1, C):
        v = tl.load(base + c * HW + s, mask=mask, other=0.0) * scale
        m = tl.minimum(m, v)
    tl.store(y_ptr + n * HW + s, m, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.conv(x).contiguous()
        N, C = x.shape[0], x.shape[1]
        out_shape = [N, 1] + list(x.shape[2:])
        y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        HW = x.numel() // (N * C) if N * C > 0 else 0
        if N * HW == 0:
            return y
        BLOCK = min(1024, triton.next_power_of_2(HW))
        n_sblocks = triton.cdiv(HW, BLOCK)
        _lz_l2_32_scale_chanmin_kernel[(N * n_sblocks,)](x, y, C, HW, n_sblocks, float(self.scale_factor),
                                                         BLOCK=BLOCK, num_warps=4)
        return y
