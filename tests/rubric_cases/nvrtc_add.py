import numpy as np
import torch
import torch.nn as nn
from cuda.bindings import driver, nvrtc

SOURCE = b"""
extern "C" __global__ void add_kernel(const float* a, const float* b, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""


def build_kernel():
    err, prog = nvrtc.nvrtcCreateProgram(SOURCE, b"add.cu", 0, [], [])
    nvrtc.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=sm_90"])
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(prog, ptx)
    err, module = driver.cuModuleLoadData(ptx)
    err, kernel = driver.cuModuleGetFunction(module, b"add_kernel")
    return kernel


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = build_kernel()

    def forward(self, a, b):
        out = torch.empty_like(a)
        n = np.array(a.numel(), dtype=np.int64)
        ptrs = [np.array(t.data_ptr(), dtype=np.uint64) for t in (a, b, out)]
        args = np.array([p.ctypes.data for p in ptrs + [n]], dtype=np.uint64)
        stream = torch.cuda.current_stream().cuda_stream
        driver.cuLaunchKernel(self.kernel, (a.numel() + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args.ctypes.data, 0)
        return out
