# GELU (tanh form) as one fused elementwise pass: the reference runs 8 kernels (pow, mul, add, mul,
# tanh, add, mul, mul), each reading and writing the whole tensor. Same fp32 operation order as the
# reference; float4 grid-stride loop with a scalar tail.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor new_gelu(torch::Tensor x);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float gelu_tanh(float x) {
    const float k0 = 0.7978845608028654f;   // sqrt(2 / pi), rounded to fp32 as PyTorch does
    const float k1 = 0.044715f;
    float inner = k0 * (x + k1 * (x * x * x));
    return (0.5f * x) * (1.0f + tanhf(inner));
}

__global__ void new_gelu_kernel(const float* __restrict__ x, float* __restrict__ y, long n, bool vec) {
    const long tid = blockIdx.x * (long)blockDim.x + threadIdx.x;
    const long stride = (long)gridDim.x * blockDim.x;
    long done = 0;
    if (vec) {
        const long n4 = n / 4;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        for (long i = tid; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = gelu_tanh(v.x); v.y = gelu_tanh(v.y); v.z = gelu_tanh(v.z); v.w = gelu_tanh(v.w);
            y4[i] = v;
        }
        done = n4 * 4;
    }
    for (long i = done + tid; i < n; i += stride) y[i] = gelu_tanh(x[i]);
}

torch::Tensor new_gelu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "new_gelu: float32 CUDA tensor expected");
    x = x.contiguous();
    auto y = at::empty_like(x);
    const long n = x.numel();
    if (n == 0) return y;
    const bool vec = ((reinterpret_cast<uintptr_t>(x.data_ptr<float>()) & 15) == 0)
                     && ((reinterpret_cast<uintptr_t>(y.data_ptr<float>()) & 15) == 0);
    const int threads = 256;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const long want = ((vec ? n / 4 : n) + threads - 1) / threads;
    const long blocks = std::max<long>(1, std::min<long>(want, (long)sms * 16));
    new_gelu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="i7_l1_88_new_gelu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["new_gelu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.new_gelu(x)
