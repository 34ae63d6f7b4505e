# style: 3 — torch.utils.cpp_extension.load from .cpp/.cu files written to a tempfile.mkdtemp() folder at construction
# Reverse cumulative sum along dim: y[..., p] = sum_{q >= p} x[..., q]. The dim is moved last; a block
# per row walks the row from its end in tiles of 256 threads x 8 items: each thread scans its 8 items,
# the block scans the thread totals (warp shuffles, then the warp totals), and a carry links the tiles.
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor rev_cumsum_last(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("rev_cumsum_last", &rev_cumsum_last, "reverse cumsum along the last dim");
}
"""

CU_SRC = r"""
#include <torch/types.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

#define ITEMS 8
#define FULL_MASK 0xffffffffu

static int lz_num_sms() {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 108;
}

// blockDim.x is a multiple of 32 (at most 1024)
__global__ void rev_cumsum_rows(const float* __restrict__ x, float* __restrict__ y, long long rows, long long L) {
    __shared__ float warp_tot[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const long long tile = (long long)blockDim.x * ITEMS;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * L;
        float* yr = y + r * L;
        float carry = 0.f;
        for (long long base = 0; base < L; base += tile) {
            // q counts from the row's end: position L - 1 - q
            const long long q0 = base + (long long)threadIdx.x * ITEMS;
            float v[ITEMS];
            float run = 0.f;
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const long long q = q0 + k;
                run += q < L ? xr[L - 1 - q] : 0.f;
                v[k] = run;
            }
            // inclusive scan of the thread totals within the warp
            float inc = run;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const float t = __shfl_up_sync(FULL_MASK, inc, o);
                if (lane >= o) inc += t;
            }
            float excl = __shfl_up_sync(FULL_MASK, inc, 1);
            if (lane == 0) excl = 0.f;
            if (lane == 31) warp_tot[warp] = inc;
            __syncthreads();
            if (warp == 0) {
                float w = lane < nwarps ? warp_tot[lane] : 0.f;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const float t = __shfl_up_sync(FULL_MASK, w, o);
                    if (lane >= o) w += t;
                }
                if (lane < nwarps) warp_tot[lane] = w;  // inclusive prefix over the warps
            }
            __syncthreads();
            const float prefix = carry + (warp > 0 ? warp_tot[warp - 1] : 0.f) + excl;
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const long long q = q0 + k;
                if (q < L) yr[L - 1 - q] = prefix + v[k];
            }
            carry += warp_tot[nwarps - 1];
            __syncthreads();  // warp_tot is rewritten by the next tile
        }
    }
}

torch::Tensor rev_cumsum_last(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "rev_cumsum_last: float32 input expected");
    TORCH_CHECK(x.dim() >= 1, "rev_cumsum_last: at least 1 dim expected");
    c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long long L = xc.size(-1);
    if (xc.numel() == 0 || L == 0) return y;
    const long long rows = xc.numel() / L;
    const int threads = 256;
    const long long blocks = std::min<long long>(rows, (long long)lz_num_sms() * 16);
    rev_cumsum_rows<<<(unsigned)blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), rows, L);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


def _build_from_files():
    folder = tempfile.mkdtemp(prefix="lz_l1_91_")
    cpp_path = os.path.join(folder, "rev_cumsum_binding.cpp")
    cu_path = os.path.join(folder, "rev_cumsum_kernel.cu")
    with open(cpp_path, "w") as f:
        f.write(CPP_SRC)
    with open(cu_path, "w") as f:
        f.write(CU_SRC)
    build_dir = os.path.join(folder, "build")
    os.makedirs(build_dir, exist_ok=True)
    return load(name="lz_l1_91_s3_rev_cumsum", sources=[cpp_path, cu_path], build_directory=build_dir,
                extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.ext = _build_from_files()

    def forward(self, x):
        dim = self.dim % x.dim()
        if dim == x.dim() - 1:
            return self.ext.rev_cumsum_last(x)
        y = self.ext.rev_cumsum_last(x.movedim(dim, -1).contiguous())
        return y.movedim(-1, dim).contiguous()
