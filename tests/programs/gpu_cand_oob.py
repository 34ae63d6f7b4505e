"""Bug: writes far past the end of the output (illegal memory access)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The same binding source in every GPU test candidate: the binding object is built once and reused.
cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

__global__ void oob_kernel(float* y, long n) { y[n + (1L << 34)] = 1.f; }
torch::Tensor relu_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    oob_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(), x.numel());
    return y;
}
"""

ext = load_inline(name="gpu_cand_oob", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["relu_forward"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_forward(x.contiguous())
