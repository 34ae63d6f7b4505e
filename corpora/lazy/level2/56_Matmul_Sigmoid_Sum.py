# style: 5 — cupy.RawModule compiled on the first call (NVRTC), on torch tensors through DLPack,
# launched on torch's current stream
# nn.Linear (self.linear) stays in PyTorch; sigmoid and the row sum (keepdim) are one kernel: a block
# per row (grid-stride over rows) sums sigmoid(x) and thread 0 writes the row's total.
import cupy
import numpy as np
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void lz_l2_56_sigmoid_rowsum(const float* __restrict__ x, float* __restrict__ y,
                                                   long long rows, long long cols) {
    __shared__ float warp_part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * cols;
        float s = 0.f;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += 1.0f / (1.0f + expf(-xr[j]));
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) warp_part[warp] = s;
        __syncthreads();
        if (warp == 0) {
            s = lane < nwarps ? warp_part[lane] : 0.f;
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) y[r] = s;
        }
        __syncthreads();  // warp_part is rewritten for the next row
    }
}
"""

_kernels = {}


def _kernel(device_index):
    k = _kernels.get(device_index)
    if k is None:
        with cupy.cuda.Device(device_index):
            k = cupy.RawModule(code=_SRC, options=("--std=c++14",)).get_function("lz_l2_56_sigmoid_rowsum")
        _kernels[device_index] = k
    return k


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        x = self.linear(x).detach().contiguous()
        rows, cols = x.shape
        y = torch.empty((rows, 1), dtype=x.dtype, device=x.device)
        if rows == 0:
            return y
        if cols == 0:
            return y.zero_()
        dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
        kern = _kernel(dev)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        blocks = max(1, min(rows, sms * 16))
        with cupy.cuda.Device(dev):
            with cupy.cuda.ExternalStream(torch.cuda.current_stream(dev).cuda_stream):
                kern((blocks,), (256,), (cupy.from_dlpack(x), cupy.from_dlpack(y), np.int64(rows), np.int64(cols)))
        return y
