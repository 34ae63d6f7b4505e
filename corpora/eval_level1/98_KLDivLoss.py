# kl_div(log(p), t, reduction='batchmean') in one pass: the reference runs log, the elementwise
# kl_div term, and a sum (writing and re-reading two full-size temporaries). Here a grid-stride
# float4 loop computes xlogy(t, t) - t * log(p) per element, accumulates in fp32 per thread, reduces
# with warp shuffles and shared memory per block, and the last block to finish (threadfence +
# atomic ticket) adds the block partials in a fixed order and divides by the batch size.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor kl_div_batchmean(torch::Tensor p, torch::Tensor t);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;

__device__ unsigned int kl_blocks_done = 0;

__device__ __forceinline__ float kl_term(float p, float t) {
    // torch: xlogy(target, target) - target * input, with input = log(p)
    float tlogt = (t == 0.f && !isnan(t)) ? 0.f : t * logf(t);
    return tlogt - t * logf(p);
}

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float block_sum(float v, float* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < WARPS ? sh[lane] : 0.f;
    return warp_sum(v);
}

__global__ void __launch_bounds__(THREADS) kl_fused(const float* __restrict__ p, const float* __restrict__ t,
                                                    float* __restrict__ partial, float* __restrict__ out,
                                                    long n, float batch, bool vec) {
    __shared__ float sh[WARPS];
    __shared__ bool is_last;
    const long tid = blockIdx.x * (long)blockDim.x + threadIdx.x;
    const long stride = (long)gridDim.x * blockDim.x;
    float acc = 0.f;
    long done = 0;
    if (vec) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        const float4* t4 = reinterpret_cast<const float4*>(t);
        const long n4 = n / 4;
        for (long i = tid; i < n4; i += stride) {
            float4 a = p4[i], b = t4[i];
            acc += (kl_term(a.x, b.x) + kl_term(a.y, b.y)) + (kl_term(a.z, b.z) + kl_term(a.w, b.w));
        }
        done = n4 * 4;
    }
    for (long i = done + tid; i < n; i += stride) acc += kl_term(p[i], t[i]);
    float b = block_sum(acc, sh);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = b;
        __threadfence();
        is_last = atomicAdd(&kl_blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    float v = 0.f;
    for (int i = threadIdx.x; i < gridDim.x; i += THREADS) v += __ldcg(partial + i);
    v = block_sum(v, sh);
    if (threadIdx.x == 0) {
        out[0] = v / batch;  // batchmean: sum / input.size(0)
        kl_blocks_done = 0;
    }
}

torch::Tensor kl_div_batchmean(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda() && p.scalar_type() == at::kFloat && t.scalar_type() == at::kFloat,
                "kl_div_batchmean: float32 CUDA tensors expected");
    TORCH_CHECK(p.sizes() == t.sizes() && p.dim() >= 1 && p.size(0) > 0, "same non-empty shapes expected");
    p = p.contiguous();
    t = t.contiguous();
    const long n = p.numel();
    auto out = at::empty({}, p.options());
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    auto aligned = [](const float* q) { return (reinterpret_cast<uintptr_t>(q) & 15) == 0; };
    const bool vec = aligned(p.data_ptr<float>()) && aligned(t.data_ptr<float>());
    const long want = ((vec ? n / 4 : n) + THREADS - 1) / THREADS;
    // many blocks keep each thread's fp32 running sum short (about 256 elements here)
    const long blocks = std::max<long>(1, std::min<long>(want, (long)sms * 32));
    auto partial = at::empty({blocks}, p.options());
    kl_fused<<<blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        p.data_ptr<float>(), t.data_ptr<float>(), partial.data_ptr<float>(), out.data_ptr<float>(), n,
        (float)p.size(0), vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="i7_l1_98_kl_div", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["kl_div_batchmean"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.kl_div_batchmean(predictions, targets)
