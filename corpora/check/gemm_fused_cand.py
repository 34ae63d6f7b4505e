import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor epilogue(torch::Tensor y, torch::Tensor bias, double mult, double slope);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void epilogue_kernel(float* __restrict__ y, const float* __restrict__ bias, long n, int cols,
                                float mult, float slope) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = (y[i] + bias[i % cols]) * mult;
        y[i] = v > 0.f ? v : v * slope;
    }
}

torch::Tensor epilogue(torch::Tensor y, torch::Tensor bias, double mult, double slope) {
    long n = y.numel();
    epilogue_kernel<<<132 * 8, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), bias.data_ptr<float>(), n, (int)y.size(1), (float)mult, (float)slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="gemm_epilogue", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["epilogue"])


class ModelNew(nn.Module):
    """cuBLAS GEMM (through torch.mm, no bias) and one fused kernel for bias + multiply + LeakyReLU."""

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.mm(x, self.gemm.weight.t())
        return ext.epilogue(y, self.gemm.bias, self.multiplier, self.negative_slope)
