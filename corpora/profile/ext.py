"""Shared CUDA extension of the GPU-check candidates: a float4 ReLU and a fused multiply+LeakyReLU."""
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void relu_f4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n4; i += stride) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        y[i] = v;
    }
}

__global__ void mul_leaky_kernel(float* __restrict__ x, float m, float slope, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] * m;
        x[i] = v > 0.f ? v : v * slope;
    }
}

torch::Tensor relu_f4(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat && x.numel() % 4 == 0);
    auto y = torch::empty_like(x);
    long n4 = x.numel() / 4;
    int threads = 256;
    long blocks = std::min<long>((n4 + threads - 1) / threads, 132L * 32);
    relu_f4_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()), reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    return y;
}

torch::Tensor mul_leaky_(torch::Tensor x, double m, double slope) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat);
    long n = x.numel();
    mul_leaky_kernel<<<(n + 255) / 256, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), (float)m, (float)slope, n);
    return x;
}
"""
CPP_SRC = "torch::Tensor relu_f4(torch::Tensor x);\ntorch::Tensor mul_leaky_(torch::Tensor x, double m, double slope);"

ext = load_inline("stitch_gpu_check_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                  functions=["relu_f4", "mul_leaky_"], verbose=False)
