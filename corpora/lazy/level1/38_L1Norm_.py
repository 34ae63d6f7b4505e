# style: 5 — cupy.RawModule compiled on the first call (NVRTC), on torch tensors through DLPack,
# launched on torch's current stream
# x / mean(|x|, dim=1, keepdim=True) for (N, D): a block per row (grid-stride over rows) sums |x|,
# the block total becomes the row mean, then the block divides the row by it.
import cupy
import numpy as np
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void lz_l1_38_l1_normalize(const float* __restrict__ x, float* __restrict__ y,
                                                 long long rows, long long cols) {
    __shared__ float warp_part[32];
    __shared__ float row_mean;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float s = 0.f;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += fabsf(xr[j]);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) warp_part[warp] = s;
        __syncthreads();
        if (warp == 0) {
            s = lane < nwarps ? warp_part[lane] : 0.f;
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) row_mean = s / (float)cols;
        }
        __syncthreads();
        const float m = row_mean;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] / m;
        __syncthreads();  // row_mean and warp_part are rewritten for the next row
    }
}
"""

_kernels = {}


def _kernel(device_index):
    k = _kernels.get(device_index)
    if k is None:
        with cupy.cuda.Device(device_index):
            k = cupy.RawModule(code=_SRC, options=("--std=c++14",)).get_function("lz_l1_38_l1_normalize")
        _kernels[device_index] = k
    return k


def _l1_normalize_last(x):
    xc = x.detach().contiguous()
    y = torch.empty_like(xc)
    if xc.numel() == 0:
        return y
    cols = xc.shape[-1]
    rows = xc.numel() // cols
    dev = xc.device.index if xc.device.index is not None else torch.cuda.current_device()
    kern = _kernel(dev)
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    blocks = max(1, min(rows, sms * 16))
    with cupy.cuda.Device(dev):
        with cupy.cuda.ExternalStream(torch.cuda.current_stream(dev).cuda_stream):
            kern((blocks,), (256,), (cupy.from_dlpack(xc), cupy.from_dlpack(y), np.int64(rows), np.int64(cols)))
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        dim = 1 % x.dim()
        if dim == x.dim() - 1:
            return _l1_normalize_last(x)
        return _l1_normalize_last(x.movedim(dim, -1)).movedim(-1, dim).contiguous()
