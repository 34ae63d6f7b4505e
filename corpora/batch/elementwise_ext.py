"""Shared CUDA extension of the benchmark's level-1 elementwise candidates (one build for all):
float4 grid-stride kernels for LeakyReLU, Sigmoid, Tanh and Swish. prepare() appends a ModelNew."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

template <int OP> __device__ __forceinline__ float act(float v, float a) {
    if (OP == 0) return v > 0.f ? v : v * a;          // LeakyReLU
    if (OP == 1) return 1.f / (1.f + expf(-v));        // Sigmoid
    if (OP == 2) return tanhf(v);                      // Tanh
    return v / (1.f + expf(-v));                       // Swish
}

template <int OP> __global__ void act_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4, float a) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n4; i += stride) {
        float4 v = x[i];
        v.x = act<OP>(v.x, a); v.y = act<OP>(v.y, a); v.z = act<OP>(v.z, a); v.w = act<OP>(v.w, a);
        y[i] = v;
    }
}

template <int OP> torch::Tensor launch(torch::Tensor x, double a) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat && x.numel() % 4 == 0);
    auto y = torch::empty_like(x);
    long n4 = x.numel() / 4;
    long blocks = std::min<long>((n4 + 255) / 256, 132L * 32);
    act_kernel<OP><<<blocks, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()), reinterpret_cast<float4*>(y.data_ptr<float>()), n4,
        (float)a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

torch::Tensor ew_leaky_relu(torch::Tensor x, double slope) { return launch<0>(x, slope); }
torch::Tensor ew_sigmoid(torch::Tensor x) { return launch<1>(x, 0.0); }
torch::Tensor ew_tanh(torch::Tensor x) { return launch<2>(x, 0.0); }
torch::Tensor ew_swish(torch::Tensor x) { return launch<3>(x, 0.0); }
"""
CPP_SRC = """torch::Tensor ew_leaky_relu(torch::Tensor x, double slope);
torch::Tensor ew_sigmoid(torch::Tensor x);
torch::Tensor ew_tanh(torch::Tensor x);
torch::Tensor ew_swish(torch::Tensor x);"""

ext = load_inline("stitch_bench_elementwise", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                  functions=["ew_leaky_relu", "ew_sigmoid", "ew_tanh", "ew_swish"], verbose=False)
