# Candidate 3 (one pass, one launch): a warp per row (grid-stride over rows) reads the row once with
# 128-bit loads and keeps an online softmax (running max and rescaled sum of exp) per lane, merged
# with warp shuffles; no shared-memory round trip per row. The mean is fused: each block writes its
# partial sum, and the last block to finish (threadfence + atomic ticket) adds the partials in a
# fixed order, so the result is deterministic and there is no second launch.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor cross_entropy_fwd(torch::Tensor logits, torch::Tensor targets);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;

__device__ unsigned int ce_blocks_done = 0;

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Online softmax state (m, s): s = sum of exp(x - m) over what was seen.
__device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v > m) { s = s * expf(m - v) + 1.f; m = v; }
    else s += expf(v - m);
}

__global__ void __launch_bounds__(THREADS) ce_fused(const float* __restrict__ x, const int64_t* __restrict__ t,
                                                    float* __restrict__ partial, float* __restrict__ out,
                                                    long rows, long cols, bool vec) {
    __shared__ float sh[WARPS];
    __shared__ bool is_last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float acc = 0.f;  // this warp's sum of row losses (lane 0)
    for (long r = (long)blockIdx.x * WARPS + warp; r < rows; r += (long)gridDim.x * WARPS) {
        const float* xr = x + r * cols;
        float m = -INFINITY, s = 0.f;
        long j0 = 0;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            const long c4 = cols / 4;
            for (long j = lane; j < c4; j += 32) {
                float4 v = x4[j];
                float mv = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
                if (mv > m) { s *= expf(m - mv); m = mv; }
                s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
            }
            j0 = c4 * 4;
        }
        for (long j = j0 + lane; j < cols; j += 32) online_add(m, s, xr[j]);
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(0xffffffffu, m, o);
            float s2 = __shfl_xor_sync(0xffffffffu, s, o);
            float mm = fmaxf(m, m2);
            s = (mm == -INFINITY) ? 0.f : s * expf(m - mm) + s2 * expf(m2 - mm);
            m = mm;
        }
        if (lane == 0) {
            int64_t k = t[r];
            acc += (k >= 0 && k < cols) ? (m + logf(s)) - xr[k] : NAN;
        }
    }
    if (lane == 0) sh[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float b = 0.f;
        #pragma unroll
        for (int w = 0; w < WARPS; ++w) b += sh[w];
        partial[blockIdx.x] = b;
        __threadfence();
        is_last = atomicAdd(&ce_blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    // Last block: add the per-block partials in a fixed order.
    float v = 0.f;
    for (int i = threadIdx.x; i < gridDim.x; i += THREADS) v += __ldcg(partial + i);
    v = warp_sum(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.f;
        #pragma unroll
        for (int w = 0; w < WARPS; ++w) total += sh[w];
        out[0] = total / (float)rows;
        ce_blocks_done = 0;  // ready for the next call
    }
}

torch::Tensor cross_entropy_fwd(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.is_cuda() && logits.scalar_type() == at::kFloat && logits.dim() == 2, "(N, C) float32 logits");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == at::kLong && targets.numel() == logits.size(0),
                "(N,) int64 targets");
    logits = logits.contiguous();
    targets = targets.contiguous();
    const long rows = logits.size(0), cols = logits.size(1);
    auto out = at::empty({}, logits.options());
    TORCH_CHECK(rows > 0 && cols > 0, "empty input");
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const long blocks = std::max<long>(1, std::min<long>((rows + WARPS - 1) / WARPS, (long)sms * 8));
    auto partial = at::empty({blocks}, logits.options());
    const bool vec = cols % 4 == 0 && (reinterpret_cast<uintptr_t>(logits.data_ptr<float>()) & 15) == 0;
    ce_fused<<<blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        logits.data_ptr<float>(), targets.data_ptr<int64_t>(), partial.data_ptr<float>(), out.data_ptr<float>(),
        rows, cols, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="i7_df_ce_c3", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["cross_entropy_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.cross_entropy_fwd(predictions, targets)
