"""ReLU following the Verifier's feedback: 16-byte vectorized access (float4), a grid-stride loop sized
to the GPU, streaming cache hints, __launch_bounds__, and a scalar tail for sizes not divisible by 4."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float relu1(float v) { return v < 0.f ? 0.f : v; }  // keeps NaN like torch

__global__ void __launch_bounds__(256) relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                                        long n4) {
    long stride = (long)gridDim.x * blockDim.x;
    #pragma unroll 4
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = __ldcs(x + i);
        v.x = relu1(v.x); v.y = relu1(v.y); v.z = relu1(v.z); v.w = relu1(v.w);
        __stcs(y + i, v);
    }
}

__global__ void __launch_bounds__(256) relu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                          long start, long n) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = start + (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = relu1(x[i]);
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a CUDA float32 tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    if (n == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    bool aligned = (reinterpret_cast<uintptr_t>(xp) % 16 == 0) && (reinterpret_cast<uintptr_t>(yp) % 16 == 0);
    long n4 = aligned ? n / 4 : 0;
    const int threads = 256;
    if (n4 > 0) {
        long blocks = std::min<long>((n4 + threads - 1) / threads, (long)sms * 16);
        relu_vec4_kernel<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(xp),
                                                         reinterpret_cast<float4*>(yp), n4);
    }
    long rest = n - n4 * 4;
    if (rest > 0) {
        long blocks = std::min<long>((rest + threads - 1) / threads, (long)sms * 16);
        relu_scalar_kernel<<<blocks, threads, 0, stream>>>(xp, yp, n4 * 4, n);
    }
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

ext = load_inline(name="relu_improved_demo", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_cuda(x)
