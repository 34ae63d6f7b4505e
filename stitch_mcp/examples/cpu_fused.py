import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Improved CPU path: one fused pass over memory (read x once, write y once, no intermediate tensors),
# rows split across cores with at::parallel_for (PyTorch's own thread pool, so no second OpenMP
# runtime competes with it), and an inner loop the compiler vectorises: GELU(tanh) is written as
# v * sigmoid(2u) with an inlined exp (2^n * polynomial) and branch-free clamps, so no libm call or branch
# blocks SIMD code generation (-fno-trapping-math lets the compiler turn the clamps into vector selects).
cpp_src = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>
#include <cstdint>
#include <cstring>

// exp(x) for x in [-87, 88]: x*log2(e) = n + f with |f| <= 0.5, 2^f by a degree-6 polynomial,
// 2^n written into the exponent bits. Relative error about 2e-7; branch-free, so it vectorises.
static inline float exp_poly(float x) {
    x = x < -87.f ? -87.f : (x > 88.f ? 88.f : x);
    const float t = x * 1.44269504089f;
    const float n = (t + 12582912.f) - 12582912.f;  // round to nearest (1.5 * 2^23 trick)
    const float f = t - n;
    float p = 1.53533179e-4f;
    p = p * f + 1.33989399e-3f;
    p = p * f + 9.61812911e-3f;
    p = p * f + 5.55041086e-2f;
    p = p * f + 2.40226507e-1f;
    p = p * f + 6.93147182e-1f;
    p = p * f + 1.f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

torch::Tensor scale_shift_gelu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat, "needs a contiguous float32 input");
    auto out = torch::empty_like(x);
    const float* __restrict__ px = x.data_ptr<float>();
    const float* __restrict__ s = scale.data_ptr<float>();
    const float* __restrict__ b = bias.data_ptr<float>();
    float* __restrict__ po = out.data_ptr<float>();
    const int64_t f = scale.numel(), rows = x.numel() / f;
    // a grain of rows worth ~64K elements keeps each task long enough to amortise the hand-off
    const int64_t grain = std::max<int64_t>(1, 65536 / f);
    at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* __restrict__ xr = px + r * f;
            float* __restrict__ yr = po + r * f;
            #pragma omp simd
            for (int64_t c = 0; c < f; ++c) {
                const float v = xr[c] * s[c] + b[c];
                const float u = 0.7978845608f * (v + 0.044715f * v * v * v);
                // 0.5 * v * (1 + tanh(u)) == v * sigmoid(2u): no cancellation where tanh(u) is near -1
                yr[c] = v / (1.f + exp_poly(-2.f * u));
            }
        }
    });
    return out;
}
"""

ext = load_inline("demo_ssg_cpu_fused3", cpp_sources=cpp_src, functions=["scale_shift_gelu"],
                  extra_cflags=["-O3", "-march=native", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math"])


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scale_shift_gelu(x.contiguous(), self.scale, self.bias)
