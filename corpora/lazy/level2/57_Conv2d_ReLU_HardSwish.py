# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# nn.Conv2d (self.conv) stays in PyTorch; relu, then x * clamp((x + 3) / 6, 0, 1), in one pass.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor relu_hswish_fwd(torch::Tensor x);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void relu_hswish_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        v = v < 0.f ? 0.f : v;
        float g = (v + 3.0f) / 6.0f;
        g = g < 0.f ? 0.f : (g > 1.f ? 1.f : g);
        y[i] = v * g;
    }
}

torch::Tensor relu_hswish_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_hswish_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    relu_hswish_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l2_57_s1_relu_hswish", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["relu_hswish_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.ext = _build()

    def forward(self, x):
        x = self.conv(x)
        return self.ext.relu_hswish_fwd(x)
