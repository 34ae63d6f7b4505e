"""A CUDA candidate without torch headers: compiles fast with nvcc, needs a GPU to run."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""

ext = load_inline(name="relu_plain", cpp_sources="", cuda_sources=cuda_source, functions=None,
                  no_implicit_headers=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp(min=0)
