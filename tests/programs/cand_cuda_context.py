"""A CUDA candidate in the style LLMs write for KernelBench: ATen/cuda/CUDAContext.h for the
current stream, c10/cuda/CUDAGuard.h for the device. A CPU build of torch lacks the CUDA library
headers these include (cusparse.h, ...) and c10/cuda/impl/cuda_cmake_macros.h: the CPU check must
still compile the candidate's own kernel and report that it needs a GPU."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_forward(torch::Tensor x) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    relu_kernel<<<(x.numel() + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="relu_ctx", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["relu_forward"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x.contiguous())
