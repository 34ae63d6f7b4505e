# style: 7 control — load_inline at module level (builds at import, not lazily)
# nn.Conv2d (self.conv) stays in PyTorch; relu and + self.bias (C, 1, 1) are one pass. A 2D grid:
# blockIdx.y walks the (n, c) planes, so the channel comes from the plane index, not per element.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor relu_bias_fwd(torch::Tensor x, torch::Tensor bias);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void relu_bias_kernel(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                                 long long planes, long long C, long long HW) {
    for (long long p = blockIdx.y; p < planes; p += gridDim.y) {
        const float b = bias[p % C];
        const float* xp = x + p * HW;
        float* yp = y + p * HW;
        for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < HW; s += (long long)gridDim.x * blockDim.x) {
            const float v = xp[s];
            yp[s] = (v < 0.f ? 0.f : v) + b;
        }
    }
}

torch::Tensor relu_bias_fwd(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32, "relu_bias_fwd: float32 expected");
    TORCH_CHECK(x.dim() >= 2 && bias.numel() == x.size(1), "relu_bias_fwd: one bias value per channel expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() == 0) return y;
    const long long C = xc.size(1);
    const long long planes = xc.size(0) * C;
    const long long HW = xc.numel() / planes;
    const int threads = 256;
    const long long bx = std::min<long long>((HW + threads - 1) / threads, 64);
    const long long by = std::min<long long>(planes, std::max<long long>(1, (long long)lz_num_sms() * 32 / bx));
    dim3 grid((unsigned)bx, (unsigned)std::min<long long>(by, 65535));
    relu_bias_kernel<<<grid, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), planes, C, HW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="lz_l2_1_s7_relu_bias", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["relu_bias_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        return ext.relu_bias_fwd(x, self.bias)
