# style: 3 — torch.utils.cpp_extension.load from .cpp/.cu files written to a tempfile.mkdtemp() folder at construction
# nn.Linear (self.gemm) stays in PyTorch; swish, / 2, clamp(-1, 1), tanh, clamp(-1, 1) in one pass.
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor swish_chain_fwd(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("swish_chain_fwd", &swish_chain_fwd, "swish / 2, clamp, tanh, clamp");
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

__device__ __forceinline__ float clamp_pm1(float v) { return v < -1.f ? -1.f : (v > 1.f ? 1.f : v); }

__global__ void swish_chain_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        v = v * (1.0f / (1.0f + expf(-v)));
        v = v / 2.0f;
        v = clamp_pm1(v);
        v = tanhf(v);
        y[i] = clamp_pm1(v);
    }
}

torch::Tensor swish_chain_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "swish_chain_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    swish_chain_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


def _build_from_files():
    folder = tempfile.mkdtemp(prefix="lz_l2_81_")
    cpp_path = os.path.join(folder, "swish_chain_binding.cpp")
    cu_path = os.path.join(folder, "swish_chain_kernel.cu")
    with open(cpp_path, "w") as f:
        f.write(CPP_SRC)
    with open(cu_path, "w") as f:
        f.write(CU_SRC)
    return load(name="lz_l2_81_s3_swish_chain", sources=[cpp_path, cu_path],
                extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)
        self.ext = _build_from_files()

    def forward(self, x):
        x = self.gemm(x)
        return self.ext.swish_chain_fwd(x)
