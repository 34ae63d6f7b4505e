# style: 2 — load_inline called on the first forward (cached in a module global)
# Softplus with PyTorch's defaults beta=1, threshold=20: x > 20 ? x : log1p(exp(x)).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor softplus_fwd(torch::Tensor x, double beta, double threshold);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void softplus_kernel(const float* __restrict__ x, float* __restrict__ y, long long n,
                                float beta, float threshold) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        const float bv = v * beta;
        y[i] = bv > threshold ? v : log1pf(expf(bv)) / beta;
    }
}

torch::Tensor softplus_fwd(torch::Tensor x, double beta, double threshold) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softplus_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    softplus_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)beta, (float)threshold);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l1_29_s2_softplus", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["softplus_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _get_ext().softplus_fwd(x, 1.0, 20.0)
