# Candidate 1 (naive, correct): one thread per row walks its 4096 logits three times (max, sum of
# exp, target logit); a second single-block kernel averages the per-row losses with a shared-memory
# tree. Neighbouring threads read rows 16 KB apart: every load of a warp touches 32 cache lines.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor cross_entropy_fwd(torch::Tensor logits, torch::Tensor targets);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void ce_row_loss(const float* __restrict__ x, const int64_t* __restrict__ t, float* __restrict__ loss,
                            long rows, long cols) {
    long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + r * cols;
    float m = -INFINITY;
    for (long j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
    float s = 0.f;
    for (long j = 0; j < cols; ++j) s += expf(xr[j] - m);
    int64_t k = t[r];
    loss[r] = (k >= 0 && k < cols) ? (m + logf(s)) - xr[k] : NAN;
}

__global__ void mean_1block(const float* __restrict__ v, float* __restrict__ out, long n) {
    __shared__ float sh[1024];
    float acc = 0.f;
    for (long i = threadIdx.x; i < n; i += blockDim.x) acc += v[i];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sh[0] / (float)n;
}

torch::Tensor cross_entropy_fwd(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.is_cuda() && logits.scalar_type() == at::kFloat && logits.dim() == 2, "(N, C) float32 logits");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == at::kLong && targets.numel() == logits.size(0),
                "(N,) int64 targets");
    logits = logits.contiguous();
    targets = targets.contiguous();
    const long rows = logits.size(0), cols = logits.size(1);
    auto loss = at::empty({rows}, logits.options());
    auto out = at::empty({}, logits.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    ce_row_loss<<<(unsigned)((rows + threads - 1) / threads), threads, 0, stream>>>(
        logits.data_ptr<float>(), targets.data_ptr<int64_t>(), loss.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    mean_1block<<<1, 1024, 0, stream>>>(loss.data_ptr<float>(), out.data_ptr<float>(), rows);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="i7_df_ce_c1", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["cross_entropy_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.cross_entropy_fwd(predictions, targets)
