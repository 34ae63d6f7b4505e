# style: 3 — torch.utils.cpp_extension.load from .cpp/.cu files written to a tempfile.mkdtemp() folder on the first call
# nn.Conv2d (self.conv) stays in PyTorch; x / divisor and leaky_relu(0.01) in one pass.
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor div_leaky_fwd(torch::Tensor x, double divisor, double slope);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("div_leaky_fwd", &div_leaky_fwd, "x / divisor, then leaky_relu");
}
"""

CU_SRC = r"""
#include <torch/types.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void div_leaky_kernel(const float* __restrict__ x, float* __restrict__ y, long long n,
                                 float divisor, float slope) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] / divisor;
        y[i] = v > 0.f ? v : v * slope;
    }
}

torch::Tensor div_leaky_fwd(torch::Tensor x, double divisor, double slope) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "div_leaky_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    div_leaky_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)divisor, (float)slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divisor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.divisor = divisor
        self._ext = None

    def _build(self):
        folder = tempfile.mkdtemp(prefix="lz_l2_71_")
        cpp_path = os.path.join(folder, "div_leaky_binding.cpp")
        cu_path = os.path.join(folder, "div_leaky_kernel.cu")
        with open(cpp_path, "w") as f:
            f.write(CPP_SRC)
        with open(cu_path, "w") as f:
            f.write(CU_SRC)
        return load(name="lz_l2_71_s3_div_leaky", sources=[cpp_path, cu_path],
                    extra_cuda_cflags=["-O3"], verbose=False)

    def forward(self, x):
        if self._ext is None:
            self._ext = self._build()
        x = self.conv(x)
        return self._ext.div_leaky_fwd(x, float(self.divisor), 0.01)
