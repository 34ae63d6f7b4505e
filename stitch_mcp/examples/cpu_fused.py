import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Improved CPU path: one fused pass over memory, rows split across threads with OpenMP, the inner
# loop vectorized (tanh written through expf, which the compiler maps to vector math).
cpp_src = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    auto out = torch::empty_like(x);
    const float *px = x.data_ptr<float>(), *s = scale.data_ptr<float>(), *b = bias.data_ptr<float>();
    float *po = out.data_ptr<float>();
    const long f = scale.numel(), rows = x.numel() / f;
    #pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
        const float* xr = px + r * f; float* yr = po + r * f;
        #pragma omp simd
        for (long c = 0; c < f; ++c) {
            float v = xr[c] * s[c] + b[c];
            float u = 0.7978845608f * (v + 0.044715f * v * v * v);
            u = fminf(fmaxf(u, -15.f), 15.f);  // tanh saturates; keeps expf finite
            float t = 1.f - 2.f / (expf(2.f * u) + 1.f);
            yr[c] = 0.5f * v * (1.f + t);
        }
    }
    return out;
}
"""

ext = load_inline("demo_ssg_cpu_fused", cpp_sources=cpp_src, functions=["scale_shift_gelu"],
                  extra_cflags=["-O3", "-march=native", "-fno-math-errno", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scale_shift_gelu(x.contiguous(), self.scale, self.bias)
