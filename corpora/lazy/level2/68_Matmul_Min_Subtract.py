# style: 5 — cupy.RawModule compiled on the first call (NVRTC), on torch tensors through DLPack,
# launched on torch's current stream
# nn.Linear (self.linear) stays in PyTorch; torch.min(x, constant) - constant in one pass. The
# constant is the 0-dim parameter self.constant, read on the device (no host sync).
import cupy
import numpy as np
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void lz_l2_68_min_sub(const float* __restrict__ x, const float* __restrict__ cptr,
                                            float* __restrict__ y, long long n) {
    const float c = cptr[0];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        const float m = (v < c || v != v) ? v : c;
        y[i] = m - c;
    }
}
"""

_kernels = {}


def _kernel(device_index):
    k = _kernels.get(device_index)
    if k is None:
        with cupy.cuda.Device(device_index):
            k = cupy.RawModule(code=_SRC, options=("--std=c++14",)).get_function("lz_l2_68_min_sub")
        _kernels[device_index] = k
    return k


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        x = self.linear(x).detach().contiguous()
        c = self.constant.detach().to(dtype=torch.float32).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
        kern = _kernel(dev)
        threads = 256
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        blocks = max(1, min((n + threads - 1) // threads, sms * 32))
        with cupy.cuda.Device(dev):
            with cupy.cuda.ExternalStream(torch.cuda.current_stream(dev).cuda_stream):
                kern((blocks,), (threads,), (cupy.from_dlpack(x), cupy.from_dlpack(c), cupy.from_dlpack(y), np.int64(n)))
        return y
