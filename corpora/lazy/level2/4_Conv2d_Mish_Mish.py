# style: 2 — load_inline called on the first forward (cached on the module instance)
# nn.Conv2d (self.conv) stays in PyTorch; mish(mish(x)) in one pass, mish(v) = v * tanh(log1p(exp(v)))
# as PyTorch computes it (no softplus threshold).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor mish_mish_fwd(torch::Tensor x);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__device__ __forceinline__ float mish_f(float v) { return v * tanhf(log1pf(expf(v))); }

__global__ void mish_mish_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = mish_f(mish_f(x[i]));
}

torch::Tensor mish_mish_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "mish_mish_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    mish_mish_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self._ext = None

    def forward(self, x):
        if self._ext is None:
            self._ext = load_inline(name="lz_l2_4_s2_mish_mish", cpp_sources=cpp_src, cuda_sources=cuda_src,
                                    functions=["mish_mish_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
        x = self.conv(x)
        return self._ext.mish_mish_fwd(x)
