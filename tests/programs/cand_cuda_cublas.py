"""A CUDA candidate that calls cuBLAS (cublas_v2.h, cublasSgemv) beside a kernel of its own: a CPU
host without the cuBLAS headers compiles it only as far as it can; that is no compile error."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    float one = 1.f, zero = 0.f;
    cublasSgemv(handle, CUBLAS_OP_N, 1, 1, &one, y.data_ptr<float>(), 1, y.data_ptr<float>(), 1, &zero,
                y.data_ptr<float>(), 1);
    return y;
}
"""

ext = load_inline(name="relu_cublas", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["relu_forward"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x.contiguous())
