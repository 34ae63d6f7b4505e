# style: 2 — load_inline called on the first forward (cached in a module global)
# x / ||x||_F: per-block partial sums of squares (double accumulators), one block adds them in a
# fixed order and writes the norm to device memory, then an elementwise pass divides by it (no
# host round trip).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor fro_normalize(torch::Tensor x);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

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

__global__ void sumsq_partial(const float* __restrict__ x, double* __restrict__ partial, long long n) {
    double acc = 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        acc += (double)(v * v);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void norm_finish(const double* __restrict__ partial, int nparts, float* __restrict__ norm) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) norm[0] = (float)sqrt(acc);
}

__global__ void divide_by_norm(const float* __restrict__ x, const float* __restrict__ norm,
                               float* __restrict__ y, long long n) {
    const float d = norm[0];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] / d;
}

torch::Tensor fro_normalize(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "fro_normalize: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int sms = lz_num_sms();
    const int rblocks = (int)std::max<long long>(1, std::min<long long>((n + threads - 1) / threads, (long long)sms * 8));
    auto partial = torch::empty({rblocks}, xc.options().dtype(torch::kFloat64));
    auto norm = torch::empty({1}, xc.options());
    auto stream = c10::cuda::getCurrentCUDAStream();
    sumsq_partial<<<rblocks, threads, 0, stream>>>(xc.data_ptr<float>(), partial.data_ptr<double>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    norm_finish<<<1, 1024, 0, stream>>>(partial.data_ptr<double>(), rblocks, norm.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const long long eblocks = std::min<long long>((n + threads - 1) / threads, (long long)sms * 32);
    divide_by_norm<<<(unsigned)eblocks, threads, 0, stream>>>(xc.data_ptr<float>(), norm.data_ptr<float>(),
                                                              y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l1_37_s2_fro_norm", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["fro_normalize"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _get_ext().fro_normalize(x)
