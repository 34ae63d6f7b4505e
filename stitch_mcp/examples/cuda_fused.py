import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Improved: one fused pass (read x once, write y once), 128-bit vectorized loads and stores,
# a grid-stride loop, on PyTorch's current stream.
cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float gelu_tanh(float v) {
    return 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

__global__ void fused_kernel(const float4* __restrict__ x, const float* __restrict__ s,
                             const float* __restrict__ b, float4* __restrict__ y, long n4, int f) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        int c = (int)((i * 4) % f);
        v.x = gelu_tanh(v.x * s[c] + b[c]);
        v.y = gelu_tanh(v.y * s[c + 1] + b[c + 1]);
        v.z = gelu_tanh(v.z * s[c + 2] + b[c + 2]);
        v.w = gelu_tanh(v.w * s[c + 3] + b[c + 3]);
        y[i] = v;
    }
}

torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    TORCH_CHECK(x.is_contiguous() && scale.numel() % 4 == 0, "needs contiguous input, features % 4 == 0");
    auto out = torch::empty_like(x);
    long n4 = x.numel() / 4;
    int threads = 256;
    int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    long blocks = std::min<long>((n4 + threads - 1) / threads, (long)sms * 8);
    fused_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()), scale.data_ptr<float>(), bias.data_ptr<float>(),
        reinterpret_cast<float4*>(out.data_ptr<float>()), n4, (int)scale.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
cpp_src = "torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias);"

ext = load_inline("demo_ssg_fused", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["scale_shift_gelu"],
                  extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scale_shift_gelu(x.contiguous(), self.scale, self.bias)
