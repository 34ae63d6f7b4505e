"""A PyTorch fallback in disguise: a CUDA kernel is built and launched, but the work is torch::relu."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void touch_kernel(float* y) {
    if (threadIdx.x == 0 && blockIdx.x == 0) { y[0] = y[0]; }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::relu(x);
    touch_kernel<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>());
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

ext = load_inline(name="relu_fallback_demo", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_cuda(x)
