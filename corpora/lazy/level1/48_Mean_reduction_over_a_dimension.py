# style: 1 — load_inline called in ModelNew.__init__ (built at construction, cached in a module global)
# Mean over any one dim (keepdim=False): x viewed as (outer, R, inner), one thread per output
# (outer, inner) sums its R values in order; neighbouring threads read neighbouring inner positions.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor mean_dim_fwd(torch::Tensor x, int64_t dim);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void mean_dim_kernel(const float* __restrict__ x, float* __restrict__ y,
                                long long outer, long long R, long long inner) {
    const long long total = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long o = t / inner, i = t - o * inner;
        const float* xp = x + o * R * inner + i;
        float s = 0.f;
        for (long long r = 0; r < R; ++r) s += xp[r * inner];
        y[t] = s / (float)R;
    }
}

torch::Tensor mean_dim_fwd(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "mean_dim_fwd: float32 input expected");
    const int64_t nd = x.dim();
    TORCH_CHECK(nd >= 1, "mean_dim_fwd: at least 1 dim expected");
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "mean_dim_fwd: dim out of range");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    std::vector<int64_t> out_shape;
    long long outer = 1, inner = 1;
    for (int64_t d = 0; d < nd; ++d) {
        if (d < dim) outer *= xc.size(d);
        if (d > dim) inner *= xc.size(d);
        if (d != dim) out_shape.push_back(xc.size(d));
    }
    const long long R = xc.size(dim);
    auto y = torch::empty(out_shape, xc.options());
    const long long total = outer * inner;
    if (total == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((total + threads - 1) / threads, (long long)lz_num_sms() * 32);
    mean_dim_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), outer, R, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _build():
    global _ext
    if _ext is None:
        _ext = load_inline(name="lz_l1_48_s1_mean_dim", cpp_sources=cpp_src, cuda_sources=cuda_src,
                           functions=["mean_dim_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.ext = _build()

    def forward(self, x):
        return self.ext.mean_dim_fwd(x, int(self.dim))
