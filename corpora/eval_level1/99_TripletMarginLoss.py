# TripletMarginLoss (p=2, eps=1e-6, mean) in one pass over the three inputs: the reference runs
# sub/add/norm twice, clamp and mean (several full-size temporaries). Here one block per row
# (grid-stride over rows) reads anchor, positive and negative once with float4 loads, accumulates
# both squared distances in fp32, reduces them with warp shuffles and shared memory, and the last
# block to finish adds the per-block loss sums in a fixed order for the mean.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor triplet_margin_loss_fwd(torch::Tensor a, torch::Tensor p, torch::Tensor n, double margin);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr float EPS = 1e-6f;  // pairwise_distance eps: ||x1 - x2 + eps||

__device__ unsigned int tml_blocks_done = 0;

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float2 block_sum2(float a, float b, float* sa, float* sb) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    a = warp_sum(a);
    b = warp_sum(b);
    __syncthreads();
    if (lane == 0) { sa[warp] = a; sb[warp] = b; }
    __syncthreads();
    a = lane < WARPS ? sa[lane] : 0.f;
    b = lane < WARPS ? sb[lane] : 0.f;
    return make_float2(warp_sum(a), warp_sum(b));
}

__device__ __forceinline__ void acc_sq(float& dp, float& dn, float a, float p, float n) {
    float u = a - p + EPS, v = a - n + EPS;
    dp += u * u;
    dn += v * v;
}

__global__ void __launch_bounds__(THREADS) triplet_fused(const float* __restrict__ A, const float* __restrict__ P,
                                                         const float* __restrict__ N, float* __restrict__ partial,
                                                         float* __restrict__ out, long rows, long cols, float margin,
                                                         bool vec) {
    __shared__ float sa[WARPS], sb[WARPS];
    __shared__ bool is_last;
    float acc = 0.f;  // thread 0: sum of this block's row losses
    for (long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long base = r * cols;
        float dp = 0.f, dn = 0.f;
        long j0 = 0;
        if (vec) {
            const float4* a4 = reinterpret_cast<const float4*>(A + base);
            const float4* p4 = reinterpret_cast<const float4*>(P + base);
            const float4* n4 = reinterpret_cast<const float4*>(N + base);
            const long c4 = cols / 4;
            for (long j = threadIdx.x; j < c4; j += THREADS) {
                float4 a = a4[j], p = p4[j], n = n4[j];
                acc_sq(dp, dn, a.x, p.x, n.x);
                acc_sq(dp, dn, a.y, p.y, n.y);
                acc_sq(dp, dn, a.z, p.z, n.z);
                acc_sq(dp, dn, a.w, p.w, n.w);
            }
            j0 = c4 * 4;
        }
        for (long j = j0 + threadIdx.x; j < cols; j += THREADS) acc_sq(dp, dn, A[base + j], P[base + j], N[base + j]);
        float2 d = block_sum2(dp, dn, sa, sb);
        if (threadIdx.x == 0) {
            float l = (margin + sqrtf(d.x)) - sqrtf(d.y);
            acc += l > 0.f ? l : (l != l ? l : 0.f);  // clamp_min(., 0), NaN kept
        }
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();
        is_last = atomicAdd(&tml_blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    float v = 0.f;
    for (int i = threadIdx.x; i < gridDim.x; i += THREADS) v += __ldcg(partial + i);
    float2 t = block_sum2(v, 0.f, sa, sb);
    if (threadIdx.x == 0) {
        out[0] = t.x / (float)rows;
        tml_blocks_done = 0;
    }
}

torch::Tensor triplet_margin_loss_fwd(torch::Tensor a, torch::Tensor p, torch::Tensor n, double margin) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == at::kFloat && a.dim() == 2, "(B, D) float32 CUDA anchor expected");
    TORCH_CHECK(p.sizes() == a.sizes() && n.sizes() == a.sizes(), "anchor, positive, negative must match");
    TORCH_CHECK(p.scalar_type() == at::kFloat && n.scalar_type() == at::kFloat, "float32 expected");
    a = a.contiguous();
    p = p.contiguous();
    n = n.contiguous();
    const long rows = a.size(0), cols = a.size(1);
    TORCH_CHECK(rows > 0, "empty batch");
    auto out = at::empty({}, a.options());
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const long blocks = std::max<long>(1, std::min<long>(rows, (long)sms * 8));
    auto partial = at::empty({blocks}, a.options());
    auto aligned = [](const float* q) { return (reinterpret_cast<uintptr_t>(q) & 15) == 0; };
    const bool vec = cols % 4 == 0 && aligned(a.data_ptr<float>()) && aligned(p.data_ptr<float>())
                     && aligned(n.data_ptr<float>());
    triplet_fused<<<blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), p.data_ptr<float>(), n.data_ptr<float>(), partial.data_ptr<float>(),
        out.data_ptr<float>(), rows, cols, (float)margin, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="i7_l1_99_triplet", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["triplet_margin_loss_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.margin = float(margin)

    def forward(self, anchor, positive, negative):
        return ext.triplet_margin_loss_fwd(anchor, positive, negative, self.margin)
