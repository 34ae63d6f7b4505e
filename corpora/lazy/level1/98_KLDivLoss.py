# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# kl_div(log(p), t, reduction='batchmean') = sum(xlogy(t, t) - t * log(p)) / batch. Two launches:
# per-block partial sums (double accumulators), then one block adds the partials in a fixed order
# (deterministic, no atomics) and divides by the batch size.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor kldiv_fwd(torch::Tensor p, torch::Tensor t);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

// Sum over the block; the result is valid in thread 0. blockDim.x is a multiple of 32.
__device__ double block_sum(double v) {
    __shared__ double warp_part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    const int nwarps = blockDim.x >> 5;
    if (warp == 0) {
        v = lane < nwarps ? warp_part[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

__global__ void kldiv_partial(const float* __restrict__ p, const float* __restrict__ t,
                              double* __restrict__ partial, long long n) {
    double acc = 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float tv = t[i];
        const float logp = logf(p[i]);
        const float xlogy = tv == 0.f ? 0.f : tv * logf(tv);
        acc += (double)(xlogy - tv * logp);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void kldiv_finish(const double* __restrict__ partial, int nparts, float* __restrict__ out,
                             double batch) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[0] = (float)(acc / batch);
}

torch::Tensor kldiv_fwd(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.scalar_type() == torch::kFloat32 && t.scalar_type() == torch::kFloat32, "kldiv_fwd: float32 expected");
    TORCH_CHECK(p.sizes() == t.sizes(), "kldiv_fwd: predictions and targets must have the same shape");
    TORCH_CHECK(p.dim() >= 1, "kldiv_fwd: batchmean needs a batch dimension");
    c10::cuda::CUDAGuard guard(p.device());
    auto pc = p.contiguous();
    auto tc = t.contiguous();
    const long long n = pc.numel();
    auto out = torch::empty({}, pc.options());
    const int threads = 256;
    const int blocks = (int)std::max<long long>(1, std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 8));
    auto partial = torch::empty({blocks}, pc.options().dtype(torch::kFloat64));
    auto stream = c10::cuda::getCurrentCUDAStream();
    kldiv_partial<<<blocks, threads, 0, stream>>>(pc.data_ptr<float>(), tc.data_ptr<float>(),
                                                  partial.data_ptr<double>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    kldiv_finish<<<1, 1024, 0, stream>>>(partial.data_ptr<double>(), blocks, out.data_ptr<float>(),
                                         (double)pc.size(0));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l1_98_s1_kldiv", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["kldiv_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = _build()

    def forward(self, predictions, targets):
        return self.ext.kldiv_fwd(predictions, targets)
