import cupy as cp
import torch
import torch.nn as nn

_add = cp.RawKernel(r"""
extern "C" __global__ void add_kernel(const float* a, const float* b, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
""", "add_kernel")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        _add(((n + 255) // 256,), (256,), (cp.asarray(a), cp.asarray(b), cp.asarray(out), cp.int64(n)))
        return out
