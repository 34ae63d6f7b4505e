# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# nn.Linear (self.linear) stays in PyTorch; x / divisor and the exact (erf) GELU are one pass.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor div_gelu_fwd(torch::Tensor x, double divisor);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void div_gelu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n, float divisor) {
    const float k_sqrt1_2 = 0.70710678118654752440f;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] / divisor;
        y[i] = v * 0.5f * (1.0f + erff(v * k_sqrt1_2));
    }
}

torch::Tensor div_gelu_fwd(torch::Tensor x, double divisor) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "div_gelu_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    div_gelu_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)divisor);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l2_86_s1_div_gelu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["div_gelu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, input_size, output_size, divisor):
        super().__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = divisor
        self.ext = _build()

    def forward(self, x):
        x = self.linear(x)
        return self.ext.div_gelu_fwd(x, float(self.divisor))
