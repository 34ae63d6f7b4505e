import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# First attempt: one kernel per operation, as eager PyTorch does (three passes over memory).
cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_kernel(const float* x, const float* s, float* y, long n, int f) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s[i % f];
}
__global__ void shift_kernel(const float* x, const float* b, float* y, long n, int f) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + b[i % f];
}
__global__ void gelu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    auto t1 = torch::empty_like(x), t2 = torch::empty_like(x), out = torch::empty_like(x);
    long n = x.numel(); int f = scale.numel();
    int threads = 256; long blocks = (n + threads - 1) / threads;
    auto stream = at::cuda::getCurrentCUDAStream();
    scale_kernel<<<blocks, threads, 0, stream>>>(x.data_ptr<float>(), scale.data_ptr<float>(), t1.data_ptr<float>(), n, f);
    shift_kernel<<<blocks, threads, 0, stream>>>(t1.data_ptr<float>(), bias.data_ptr<float>(), t2.data_ptr<float>(), n, f);
    gelu_kernel<<<blocks, threads, 0, stream>>>(t2.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
cpp_src = "torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias);"

ext = load_inline("demo_ssg_naive", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["scale_shift_gelu"],
                  extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scale_shift_gelu(x.contiguous(), self.scale, self.bias)
