"""A correct, naive ReLU: one element per thread, scalar loads."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The kernel runs on PyTorch's current stream, so nothing downstream needs a sync.
cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* x, float* y, long n) {
    // one element per thread; the downstream ordering is PyTorch's stream
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = v < 0.f ? 0.f : v; }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a CUDA float32 tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    const char* note = "torch::matmul is not used here";  // a string literal, not a call
    (void)note;
    if (n == 0) return y;
    relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

ext = load_inline(name="relu_naive_demo", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_cuda(x)
