"""A CUDA candidate without torch headers that builds at construction: compiles fast with nvcc,
needs a GPU to run."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
__global__ void relu_kernel_lazy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = load_inline(name="relu_plain_lazy", cpp_sources="", cuda_sources=cuda_source, functions=None,
                               no_implicit_headers=True)

    def forward(self, x):
        return x.clamp(min=0)
