import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# CPU path (no GPU on this machine): C++ with one loop per operation, three passes over memory.
cpp_src = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    auto t1 = torch::empty_like(x), t2 = torch::empty_like(x), out = torch::empty_like(x);
    const float *px = x.data_ptr<float>(), *s = scale.data_ptr<float>(), *b = bias.data_ptr<float>();
    float *p1 = t1.data_ptr<float>(), *p2 = t2.data_ptr<float>(), *po = out.data_ptr<float>();
    const long n = x.numel(); const long f = scale.numel();
    for (long i = 0; i < n; ++i) p1[i] = px[i] * s[i % f];
    for (long i = 0; i < n; ++i) p2[i] = p1[i] + b[i % f];
    for (long i = 0; i < n; ++i) {
        float v = p2[i];
        po[i] = 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
    return out;
}
"""

ext = load_inline("demo_ssg_cpu_naive", cpp_sources=cpp_src, functions=["scale_shift_gelu"], extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scale_shift_gelu(x.contiguous(), self.scale, self.bias)
