# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# Exact (erf) GELU, as F.gelu's default: x * 0.5 * (1 + erf(x / sqrt(2))), fp32 erff.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor gelu_fwd(torch::Tensor x);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void gelu_erf_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const float k_sqrt1_2 = 0.70710678118654752440f;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        y[i] = v * 0.5f * (1.0f + erff(v * k_sqrt1_2));
    }
}

torch::Tensor gelu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "gelu_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    gelu_erf_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l1_26_s1_gelu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["gelu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = _build()

    def forward(self, x):
        return self.ext.gelu_fwd(x)
