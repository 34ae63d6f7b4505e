# style: 2 — load_inline called on the first forward (cached in a module global)
# nn.Linear without bias (self.gemm) stays in PyTorch; + self.bias (one value per output column)
# and relu are one pass over the (rows, cols) result.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor bias_relu_fwd(torch::Tensor x, torch::Tensor bias);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

// 2D grid-stride: blockIdx.y walks rows, x threads walk columns (no per-element division)
__global__ void bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                                 long long rows, long long cols) {
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += (long long)gridDim.x * blockDim.x) {
            const float v = xr[c] + bias[c];
            yr[c] = v < 0.f ? 0.f : v;
        }
    }
}

torch::Tensor bias_relu_fwd(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32, "bias_relu_fwd: float32 expected");
    TORCH_CHECK(x.dim() >= 1 && bias.numel() == x.size(-1), "bias_relu_fwd: bias must have one value per column");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    const long long cols = xc.size(-1);
    if (xc.numel() == 0) return y;
    const long long rows = xc.numel() / cols;
    const int threads = 256;
    const long long bx = std::min<long long>((cols + threads - 1) / threads, 64);
    const long long by = std::min<long long>(rows, std::max<long long>(1, (long long)lz_num_sms() * 32 / bx));
    dim3 grid((unsigned)bx, (unsigned)std::min<long long>(by, 65535));
    bias_relu_kernel<<<grid, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l2_76_s2_bias_relu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["bias_relu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.gemm(x)
        return _get_ext().bias_relu_fwd(x, self.bias)
