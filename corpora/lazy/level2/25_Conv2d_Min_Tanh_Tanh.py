# style: 3 — torch.utils.cpp_extension.load from .cpp/.cu files written to a tempfile.mkdtemp() folder on the first call
# nn.Conv2d (self.conv) stays in PyTorch; the min over channels (keepdim) and tanh(tanh(.)) are one
# kernel: a thread per (n, h, w) walks the C channels (neighbouring threads read neighbouring w).
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor chanmin_tanh2_fwd(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("chanmin_tanh2_fwd", &chanmin_tanh2_fwd, "min over dim 1 (keepdim), tanh, tanh");
}
"""

CU_SRC = r"""
#include <torch/types.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

__global__ void chanmin_tanh2_kernel(const float* __restrict__ x, float* __restrict__ y,
                                     long long N, long long C, long long HW) {
    const long long total = N * HW;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long n = t / HW, s = t - n * HW;
        const float* xp = x + n * C * HW + s;
        float m = xp[0];
        for (long long c = 1; c < C; ++c) {
            const float v = xp[c * HW];
            if (v < m || v != v) m = v;
        }
        y[t] = tanhf(tanhf(m));
    }
}

torch::Tensor chanmin_tanh2_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "chanmin_tanh2_fwd: float32 input expected");
    TORCH_CHECK(x.dim() >= 2 && x.size(1) > 0, "chanmin_tanh2_fwd: (N, C, ...) with C > 0 expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto sizes = xc.sizes().vec();
    const long long N = sizes[0], C = sizes[1];
    sizes[1] = 1;
    auto y = torch::empty(sizes, xc.options());
    if (xc.numel() == 0) return y;
    const long long HW = xc.numel() / (N * C);
    const long long total = N * HW;
    const int threads = 256;
    const long long blocks = std::min<long long>((total + threads - 1) / threads, (long long)lz_num_sms() * 32);
    chanmin_tanh2_kernel<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), N, C, HW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        folder = tempfile.mkdtemp(prefix="lz_l2_25_")
        cpp_path = os.path.join(folder, "chanmin_binding.cpp")
        cu_path = os.path.join(folder, "chanmin_kernel.cu")
        with open(cpp_path, "w") as f:
            f.write(CPP_SRC)
        with open(cu_path, "w") as f:
            f.write(CU_SRC)
        build_dir = os.path.join(folder, "build")
        os.makedirs(build_dir, exist_ok=True)
        _ext = load(name="lz_l2_25_s3_chanmin_tanh2", sources=[cpp_path, cu_path], build_directory=build_dir,
                    extra_cuda_cflags=["-O3"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = self.conv(x)
        return _get_ext().chanmin_tanh2_fwd(x)
