# style: 2 — load_inline called on the first forward (cached on the module instance)
# ELU: x > 0 ? x : expm1(x) * alpha (alpha from the constructor).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor elu_fwd(torch::Tensor x, double alpha);"

cuda_src = r"""
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void elu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n, float alpha) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        y[i] = v > 0.f ? v : expm1f(v) * alpha;
    }
}

torch::Tensor elu_fwd(torch::Tensor x, double alpha) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "elu_fwd: float32 input expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, (long long)lz_num_sms() * 32);
    elu_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, (float)alpha);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha
        self._ext = None

    def forward(self, x):
        if self._ext is None:
            self._ext = load_inline(name="lz_l1_31_s2_elu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                                    functions=["elu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)
        return self._ext.elu_fwd(x, float(self.alpha))
