# style: 5 — cupy.RawModule compiled on the first call (NVRTC), on torch tensors through DLPack,
# launched on torch's current stream
# nn.Linear (self.matmul) stays in PyTorch; + self.add_value (one per column), swish, tanh, exact GELU
# and hardtanh(-1, 1) are one pass; a 2D grid (y: rows, x: columns) avoids per-element division.
import cupy
import numpy as np
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void lz_l2_95_epilogue(const float* __restrict__ x, const float* __restrict__ add,
                                             float* __restrict__ y, long long rows, long long cols) {
    const float k_sqrt1_2 = 0.70710678118654752440f;
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += (long long)gridDim.x * blockDim.x) {
            float v = xr[c] + add[c];
            v = (1.0f / (1.0f + expf(-v))) * v;          // swish
            v = tanhf(v);
            v = v * 0.5f * (1.0f + erff(v * k_sqrt1_2));  // exact GELU
            yr[c] = v < -1.f ? -1.f : (v > 1.f ? 1.f : v);
        }
    }
}
"""

_kernels = {}


def _kernel(device_index):
    k = _kernels.get(device_index)
    if k is None:
        with cupy.cuda.Device(device_index):
            k = cupy.RawModule(code=_SRC, options=("--std=c++14",)).get_function("lz_l2_95_epilogue")
        _kernels[device_index] = k
    return k


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, add_value_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.add_value = nn.Parameter(torch.randn(add_value_shape))

    def forward(self, x):
        x = self.matmul(x).detach().contiguous()
        add = self.add_value.detach().contiguous()
        cols = x.shape[-1]
        if add.numel() != cols:
            raise RuntimeError("add_value must hold one value per output column")
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        rows = x.numel() // cols
        dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
        kern = _kernel(dev)
        threads = 256
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        bx = min((cols + threads - 1) // threads, 64)
        by = min(rows, max(1, sms * 32 // bx), 65535)
        with cupy.cuda.Device(dev):
            with cupy.cuda.ExternalStream(torch.cuda.current_stream(dev).cuda_stream):
                kern((bx, by), (threads,), (cupy.from_dlpack(x), cupy.from_dlpack(add), cupy.from_dlpack(y),
                                            np.int64(rows), np.int64(cols)))
        return y
