# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# RMS norm over dim 1 of (B, C, *): one thread per (b, spatial position) walks the C channels twice
# (sum of squares, then x / rms); neighbouring threads read neighbouring positions (coalesced).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor rmsnorm_fwd(torch::Tensor x, double eps);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

// x viewed as (outer, C, inner); one thread per (outer, inner) pair.
__global__ void rmsnorm_kernel(const float* __restrict__ x, float* __restrict__ y,
                               long long outer, long long C, long long inner, float eps) {
    const long long total = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long o = t / inner, i = t - o * inner;
        const float* xp = x + o * C * inner + i;
        float* yp = y + o * C * inner + i;
        float ss = 0.f;
        for (long long c = 0; c < C; ++c) {
            const float v = xp[c * inner];
            ss += v * v;
        }
        const float rms = sqrtf(ss / (float)C + eps);
        for (long long c = 0; c < C; ++c) yp[c * inner] = xp[c * inner] / rms;
    }
}

torch::Tensor rmsnorm_fwd(torch::Tensor x, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "rmsnorm_fwd: float32 input expected");
    TORCH_CHECK(x.dim() >= 2, "rmsnorm_fwd: at least 2 dims expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long outer = xc.size(0), C = xc.size(1);
    const long long inner = C > 0 && outer > 0 ? xc.numel() / (outer * C) : 0;
    if (xc.numel() == 0) return y;
    const int threads = 256;
    const long long work = outer * inner;
    const long long blocks = std::min<long long>((work + threads - 1) / threads, (long long)lz_num_sms() * 32);
    rmsnorm_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), outer, C, inner, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l1_36_s1_rmsnorm", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["rmsnorm_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.ext = _build()

    def forward(self, x):
        return self.ext.rmsnorm_fwd(x, float(self.eps))
