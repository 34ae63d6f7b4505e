"""A CUDA candidate whose host wrapper divides the output tensor by a float (issue 15's
`return out / (float)n;`): it builds with plain load_inline, so it must compile here (needs a GPU
to run), never be reported as a compile error."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor relu_scaled(torch::Tensor x, int64_t n);"

cuda_source = r"""
#include <torch/extension.h>

__global__ void relu_times(const float* x, float* y, long n, float k) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] * k : 0.f;
}

torch::Tensor relu_scaled(torch::Tensor x, int64_t n) {
    auto out = torch::empty_like(x);
    relu_times<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), (float)n);
    return out / (float)n;
}
"""

ext = load_inline(name="relu_div_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["relu_scaled"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_scaled(x.contiguous(), 4)
