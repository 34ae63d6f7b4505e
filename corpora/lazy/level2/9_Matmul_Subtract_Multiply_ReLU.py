# style: 2 — load_inline called on the first forward (cached in a module global)
# nn.Linear (self.linear) stays in PyTorch; (x - subtract_value) * multiply_value and relu are one pass.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor sub_mul_relu_fwd(torch::Tensor x, double sub, double mul);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void sub_mul_relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n,
                                    float sub, float mul) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = (x[i] - sub) * mul;
        y[i] = v < 0.f ? 0.f : v;
    }
}

torch::Tensor sub_mul_relu_fwd(torch::Tensor x, double sub, double mul) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "sub_mul_relu_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    sub_mul_relu_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)sub, (float)mul);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l2_9_s2_sub_mul_relu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["sub_mul_relu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        x = self.linear(x)
        return _get_ext().sub_mul_relu_fwd(x, float(self.subtract_value), float(self.multiply_value))
