# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# The GEMM stays in nn.Linear (self.gemm, as in the reference); the epilogue (x * multiplier, then
# LeakyReLU) is one elementwise pass instead of two.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor mul_leaky_fwd(torch::Tensor x, double multiplier, double slope);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void mul_leaky_kernel(const float* __restrict__ x, float* __restrict__ y, long long n,
                                 float multiplier, float slope) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] * multiplier;
        y[i] = v > 0.f ? v : v * slope;
    }
}

torch::Tensor mul_leaky_fwd(torch::Tensor x, double multiplier, double slope) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "mul_leaky_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    mul_leaky_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)multiplier, (float)slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l2_12_s1_mul_leaky", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["mul_leaky_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope
        self.ext = _build()

    def forward(self, x):
        x = self.gemm(x)
        return self.ext.mul_leaky_fwd(x, float(self.multiplier), float(self.negative_slope))
