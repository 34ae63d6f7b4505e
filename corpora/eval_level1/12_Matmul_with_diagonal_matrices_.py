# diag(A) @ B == A[:, None] * B: one memory-bound pass instead of a matmul. Each block walks rows
# (grid-stride), loads its row's scale once, and streams the row with 128-bit loads/stores
# (scalar path when the row length or the pointers do not allow float4).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor diag_scale_rows(torch::Tensor a, torch::Tensor b);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void diag_scale_rows_vec(const float* __restrict__ a, const float4* __restrict__ b,
                                    float4* __restrict__ c, long rows, long m4) {
    for (long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float s = __ldg(a + r);
        const float4* src = b + r * m4;
        float4* dst = c + r * m4;
        for (long j = threadIdx.x; j < m4; j += blockDim.x) {
            float4 v = src[j];
            v.x *= s; v.y *= s; v.z *= s; v.w *= s;
            dst[j] = v;
        }
    }
}

__global__ void diag_scale_rows_scalar(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ c, long rows, long m) {
    for (long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float s = __ldg(a + r);
        for (long j = threadIdx.x; j < m; j += blockDim.x) c[r * m + j] = s * b[r * m + j];
    }
}

torch::Tensor diag_scale_rows(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "diag_scale_rows: CUDA tensors expected");
    TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "float32 expected");
    TORCH_CHECK(a.dim() == 1 && b.dim() == 2 && a.size(0) == b.size(0), "A (N,), B (N, M) expected");
    a = a.contiguous();
    b = b.contiguous();
    auto c = at::empty_like(b);
    const long rows = b.size(0), m = b.size(1);
    if (rows == 0 || m == 0) return c;
    const int threads = 256;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const long blocks = std::min<long>(rows, (long)sms * 16);
    auto stream = at::cuda::getCurrentCUDAStream();
    const bool vec = (m % 4 == 0) && ((reinterpret_cast<uintptr_t>(b.data_ptr<float>()) & 15) == 0)
                     && ((reinterpret_cast<uintptr_t>(c.data_ptr<float>()) & 15) == 0);
    if (vec) {
        diag_scale_rows_vec<<<blocks, threads, 0, stream>>>(
            a.data_ptr<float>(), reinterpret_cast<const float4*>(b.data_ptr<float>()),
            reinterpret_cast<float4*>(c.data_ptr<float>()), rows, m / 4);
    } else {
        diag_scale_rows_scalar<<<blocks, threads, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                               c.data_ptr<float>(), rows, m);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

ext = load_inline(name="i7_l1_12_diag_scale", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["diag_scale_rows"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.diag_scale_rows(A, B)
