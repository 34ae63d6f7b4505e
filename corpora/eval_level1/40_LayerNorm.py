# LayerNorm over 4M-element rows (16 rows). PyTorch gives each row one block (16 blocks on a
# 132-SM GPU); here every row is split across many blocks:
#   1. ln_partial_stats: each (row, chunk) block reduces sum and sum of squares of (x - shift)
#      (shift = the row's first element, against cancellation) with float4 loads, warp shuffles and
#      a shared-memory tree, fp32 throughout;
#   2. ln_normalize: each block combines the row's chunk partials in a fixed-order tree (every
#      block gets the same mean/rstd) and normalizes its chunk with the affine weight and bias.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor layer_norm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum of a and b over the block; the result is valid in every thread.
__device__ __forceinline__ float2 block_sum2(float a, float b) {
    __shared__ float sa[THREADS / 32], sb[THREADS / 32];
    a = warp_sum(a);
    b = warp_sum(b);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // the shared slots may still be read by a previous call
    if (lane == 0) { sa[warp] = a; sb[warp] = b; }
    __syncthreads();
    a = lane < THREADS / 32 ? sa[lane] : 0.f;
    b = lane < THREADS / 32 ? sb[lane] : 0.f;
    a = warp_sum(a);
    b = warp_sum(b);
    return make_float2(a, b);
}

__global__ void __launch_bounds__(THREADS) ln_partial_stats(const float* __restrict__ x, float2* __restrict__ part,
                                                            long d, long chunk, int nchunks, bool vec) {
    const long row = blockIdx.y;
    const float* xr = x + row * d;
    const float shift = __ldg(xr);
    for (int c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const long start = (long)c * chunk;
        const long end = min(d, start + chunk);
        float s = 0.f, q = 0.f;
        if (vec) {  // chunk and d are multiples of 4, the row is 16-byte aligned
            const float4* x4 = reinterpret_cast<const float4*>(xr + start);
            const long n4 = (end - start) / 4;
            for (long i = threadIdx.x; i < n4; i += blockDim.x) {
                float4 v = x4[i];
                float a0 = v.x - shift, a1 = v.y - shift, a2 = v.z - shift, a3 = v.w - shift;
                s += (a0 + a1) + (a2 + a3);
                q += (a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3);
            }
        } else {
            for (long i = start + threadIdx.x; i < end; i += blockDim.x) {
                float a0 = xr[i] - shift;
                s += a0;
                q += a0 * a0;
            }
        }
        float2 t = block_sum2(s, q);
        if (threadIdx.x == 0) part[row * nchunks + c] = t;
    }
}

__global__ void __launch_bounds__(THREADS) ln_normalize(const float* __restrict__ x, const float* __restrict__ w,
                                                        const float* __restrict__ b, const float2* __restrict__ part,
                                                        float* __restrict__ y, long d, long chunk, int nchunks,
                                                        float eps, bool vec) {
    const long row = blockIdx.y;
    const float* xr = x + row * d;
    float* yr = y + row * d;
    // Row statistics from the chunk partials, in the same order in every block.
    float s = 0.f, q = 0.f;
    for (int i = threadIdx.x; i < nchunks; i += blockDim.x) {
        float2 p = part[row * nchunks + i];
        s += p.x;
        q += p.y;
    }
    float2 t = block_sum2(s, q);
    const float inv_d = 1.f / (float)d;
    const float m_shifted = t.x * inv_d;
    const float var = fmaxf(t.y * inv_d - m_shifted * m_shifted, 0.f);
    const float mean = __ldg(xr) + m_shifted;
    const float rstd = rsqrtf(var + eps);
    for (int c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const long start = (long)c * chunk;
        const long end = min(d, start + chunk);
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr + start);
            const float4* w4 = reinterpret_cast<const float4*>(w + start);
            const float4* b4 = reinterpret_cast<const float4*>(b + start);
            float4* y4 = reinterpret_cast<float4*>(yr + start);
            const long n4 = (end - start) / 4;
            for (long i = threadIdx.x; i < n4; i += blockDim.x) {
                float4 v = x4[i], g = __ldg(w4 + i), h = __ldg(b4 + i), o;
                o.x = (v.x - mean) * rstd * g.x + h.x;
                o.y = (v.y - mean) * rstd * g.y + h.y;
                o.z = (v.z - mean) * rstd * g.z + h.z;
                o.w = (v.w - mean) * rstd * g.w + h.w;
                y4[i] = o;
            }
        } else {
            for (long i = start + threadIdx.x; i < end; i += blockDim.x)
                yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
        }
    }
}

torch::Tensor layer_norm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "layer_norm_fwd: float32 CUDA input expected");
    x = x.contiguous();
    w = w.contiguous();
    b = b.contiguous();
    const long d = w.numel();
    TORCH_CHECK(d > 0 && b.numel() == d && x.numel() % d == 0, "normalized shape mismatch");
    const long rows = x.numel() / d;
    auto y = at::empty_like(x);
    if (rows == 0) return y;
    TORCH_CHECK(rows <= 65535, "too many rows for this kernel");
    const long chunk = 32768;  // elements per block: multiple of 4
    const int nchunks = (int)((d + chunk - 1) / chunk);
    auto aligned = [](const float* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
    const bool vec = d % 4 == 0 && aligned(x.data_ptr<float>()) && aligned(w.data_ptr<float>())
                     && aligned(b.data_ptr<float>()) && aligned(y.data_ptr<float>());
    auto part = at::empty({rows * nchunks * 2}, x.options());
    float2* p2 = reinterpret_cast<float2*>(part.data_ptr<float>());
    auto stream = at::cuda::getCurrentCUDAStream();
    dim3 grid((unsigned)std::min(nchunks, 65535), (unsigned)rows);
    ln_partial_stats<<<grid, THREADS, 0, stream>>>(x.data_ptr<float>(), p2, d, chunk, nchunks, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    ln_normalize<<<grid, THREADS, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), p2,
                                               y.data_ptr<float>(), d, chunk, nchunks, (float)eps, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="i7_l1_40_layer_norm", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["layer_norm_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)  # holds weight and bias only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.layer_norm_fwd(x, self.ln.weight, self.ln.bias, self.ln.eps)
