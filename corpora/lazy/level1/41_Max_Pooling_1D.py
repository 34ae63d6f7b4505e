# style: 5 — cupy.RawModule compiled on the first call (NVRTC), on torch tensors through DLPack,
# launched on torch's current stream
# MaxPool1d(kernel_size, stride, padding, dilation, return_indices), ceil_mode=False: one thread per
# output; padding is -inf (never chosen); a NaN wins as in PyTorch; indices (optional) are positions
# in the unpadded row.
import cupy
import numpy as np
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void lz_l1_41_max_pool1d(const float* __restrict__ x, float* __restrict__ y,
                                               long long* __restrict__ idx, int want_idx,
                                               long long rows, long long L, long long Lout,
                                               int k, int s, int p, int d) {
    const long long total = rows * Lout;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long r = t / Lout, o = t - r * Lout;
        const float* xr = x + r * L;
        const long long start = o * s - p;
        float m = __int_as_float(0xff800000);  // -inf
        long long mi = -1;
        for (int j = 0; j < k; ++j) {
            const long long pos = start + (long long)j * d;
            if (pos < 0 || pos >= L) continue;
            const float v = xr[pos];
            if (mi < 0 || v > m || v != v) {
                m = v;
                mi = pos;
                if (v != v) break;
            }
        }
        y[t] = m;
        if (want_idx) idx[t] = mi;
    }
}
"""

_kernels = {}


def _kernel(device_index):
    k = _kernels.get(device_index)
    if k is None:
        with cupy.cuda.Device(device_index):
            k = cupy.RawModule(code=_SRC, options=("--std=c++14",)).get_function("lz_l1_41_max_pool1d")
        _kernels[device_index] = k
    return k


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1,
                 return_indices: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices

    def forward(self, x):
        k, s, p, d = int(self.kernel_size), int(self.stride), int(self.padding), int(self.dilation)
        if x.dim() not in (2, 3):
            raise RuntimeError("max_pool1d: (C, L) or (N, C, L) input expected")
        if p > k // 2:
            raise RuntimeError("max_pool1d: padding should be at most half of the kernel size")
        xc = x.detach().contiguous()
        L = xc.shape[-1]
        Lout = (L + 2 * p - d * (k - 1) - 1) // s + 1
        if Lout <= 0:
            raise RuntimeError("max_pool1d: output size would be empty")
        out_shape = list(xc.shape[:-1]) + [Lout]
        y = torch.empty(out_shape, dtype=xc.dtype, device=xc.device)
        idx = torch.empty(out_shape if self.return_indices else [1], dtype=torch.int64, device=xc.device)
        rows = xc.numel() // L if L > 0 else 0
        total = rows * Lout
        if total > 0:
            dev = xc.device.index if xc.device.index is not None else torch.cuda.current_device()
            kern = _kernel(dev)
            threads = 256
            sms = torch.cuda.get_device_properties(dev).multi_processor_count
            blocks = max(1, min((total + threads - 1) // threads, sms * 32))
            with cupy.cuda.Device(dev):
                with cupy.cuda.ExternalStream(torch.cuda.current_stream(dev).cuda_stream):
                    kern((blocks,), (threads,), (cupy.from_dlpack(xc), cupy.from_dlpack(y), cupy.from_dlpack(idx),
                                                 np.int32(1 if self.return_indices else 0), np.int64(rows),
                                                 np.int64(L), np.int64(Lout), np.int32(k), np.int32(s),
                                                 np.int32(p), np.int32(d)))
        return (y, idx) if self.return_indices else y
