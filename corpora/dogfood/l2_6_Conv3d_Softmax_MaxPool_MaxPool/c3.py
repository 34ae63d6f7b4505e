# Candidate 3 (one kernel, no intermediate): MaxPool3d(2) twice is a max over a 4x4x4 window, so a
# group of 64 threads (2 warps) owns one final output position: each thread computes the conv at
# one window position for all (<= 16) output channels in registers (weights and bias broadcast from
# shared memory), applies the channel softmax in registers, and the group takes the per-channel
# max with warp shuffles plus one shared-memory step. Conv positions no pool window covers are never
# computed, the 100 MB conv/softmax tensor never exists, and there is one launch. Groups walk the
# outputs with a grid-stride loop; blocks load the weights once.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor conv_softmax_pool2(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t pool);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int MAXC = 16;              // output channels held in registers
constexpr int MAXW = 8192;            // weights + bias in shared memory (floats)
constexpr int G = 4;                  // window width per dimension: pool 2, twice
constexpr int GROUP = G * G * G;      // 64 threads per final output
constexpr int GROUPS = THREADS / GROUP;

__device__ __forceinline__ float nanmax(float a, float b) { return (b > a || isnan(b)) ? b : a; }

template <int K>
__global__ void __launch_bounds__(THREADS) conv_softmax_pool_fused(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y,
        int N, int Ci, int Co, int D, int H, int W, int FD, int FH, int FW) {
    extern __shared__ float smem[];
    const int nw = Co * Ci * K * K * K;
    float* ws = smem;                     // [Co][Ci][K][K][K]
    float* bs = ws + nw;                  // [Co]
    float* red = bs + MAXC;               // [GROUPS * 2][MAXC]: per-warp channel maxima
    for (int i = threadIdx.x; i < nw; i += THREADS) ws[i] = w[i];
    for (int i = threadIdx.x; i < Co; i += THREADS) bs[i] = b[i];
    __syncthreads();
    const int g = threadIdx.x / GROUP, t = threadIdx.x % GROUP;
    const int lane = threadIdx.x & 31, half = t / 32;
    const int dd = t / (G * G), hh = (t / G) % G, wq = t % G;
    const long total = (long)N * FD * FH * FW;
    for (long base = (long)blockIdx.x * GROUPS; base < total; base += (long)gridDim.x * GROUPS) {
        const long f = base + g;
        const bool active = f < total;
        float p[MAXC];
        long n = 0;
        int fd = 0, fh = 0, fw = 0;
        if (active) {
            fw = (int)(f % FW);
            fh = (int)((f / FW) % FH);
            fd = (int)((f / ((long)FW * FH)) % FD);
            n = f / ((long)FW * FH * FD);
            const int d = fd * G + dd, h = fh * G + hh, wc = fw * G + wq;
            #pragma unroll
            for (int c = 0; c < MAXC; ++c) p[c] = c < Co ? bs[c] : 0.f;
            for (int ci = 0; ci < Ci; ++ci) {
                const float* xc = x + ((n * Ci + ci) * D + d) * (long)H * W + (long)h * W + wc;
                #pragma unroll
                for (int kd = 0; kd < K; ++kd)
                    #pragma unroll
                    for (int kh = 0; kh < K; ++kh)
                        #pragma unroll
                        for (int kw = 0; kw < K; ++kw) {
                            const float xv = __ldg(xc + ((long)kd * H + kh) * W + kw);
                            const int koff = ci * K * K * K + (kd * K + kh) * K + kw;
                            #pragma unroll
                            for (int c = 0; c < MAXC; ++c)
                                if (c < Co) p[c] += ws[c * Ci * K * K * K + koff] * xv;
                        }
            }
            float m = -INFINITY;
            #pragma unroll
            for (int c = 0; c < MAXC; ++c) if (c < Co) m = fmaxf(m, p[c]);
            float sum = 0.f;
            #pragma unroll
            for (int c = 0; c < MAXC; ++c) if (c < Co) { p[c] = expf(p[c] - m); sum += p[c]; }
            #pragma unroll
            for (int c = 0; c < MAXC; ++c) p[c] = c < Co ? p[c] / sum : -INFINITY;
        } else {
            #pragma unroll
            for (int c = 0; c < MAXC; ++c) p[c] = -INFINITY;
        }
        // max over the 64 window positions: within each warp, then across the group's two warps
        #pragma unroll
        for (int c = 0; c < MAXC; ++c)
            #pragma unroll
            for (int o = 16; o > 0; o >>= 1) p[c] = nanmax(p[c], __shfl_xor_sync(0xffffffffu, p[c], o));
        if (lane == 0) {
            #pragma unroll
            for (int c = 0; c < MAXC; ++c) red[(g * 2 + half) * MAXC + c] = p[c];
        }
        __syncthreads();
        if (active && t < Co) {
            const float v = nanmax(red[(g * 2) * MAXC + t], red[(g * 2 + 1) * MAXC + t]);
            y[(((n * Co + t) * FD + fd) * FH + fh) * (long)FW + fw] = v;
        }
        __syncthreads();
    }
}

torch::Tensor conv_softmax_pool2(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t pool) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 5, "(N, C, D, H, W) float32 CUDA input");
    TORCH_CHECK(w.dim() == 5 && w.size(1) == x.size(1) && w.size(2) == w.size(3) && w.size(3) == w.size(4),
                "cubic Conv3d weight expected");
    TORCH_CHECK(pool == 2, "this kernel fuses two MaxPool3d(2) (a 4x4x4 window)");
    x = x.contiguous(); w = w.contiguous(); b = b.contiguous();
    const int N = (int)x.size(0), Ci = (int)x.size(1), D = (int)x.size(2), H = (int)x.size(3), W = (int)x.size(4);
    const int Co = (int)w.size(0), K = (int)w.size(2);
    TORCH_CHECK(Co <= MAXC && w.numel() + MAXC + GROUPS * 2 * MAXC <= MAXW, "up to 16 output channels supported");
    TORCH_CHECK(K == 3 || K == 5 || K == 1, "kernel size 1, 3 or 5 supported");
    const int OD = D - K + 1, OH = H - K + 1, OW = W - K + 1;
    const int FD = OD / 2 / 2, FH = OH / 2 / 2, FW = OW / 2 / 2;
    TORCH_CHECK(FD > 0 && FH > 0 && FW > 0, "input too small");
    auto out = at::empty({N, Co, FD, FH, FW}, x.options());
    const long total = (long)N * FD * FH * FW;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const long blocks = std::max<long>(1, std::min<long>((total + GROUPS - 1) / GROUPS, (long)sms * 8));
    const size_t smem = (w.numel() + MAXC + GROUPS * 2 * MAXC) * sizeof(float);
    auto stream = at::cuda::getCurrentCUDAStream();
    auto launch = [&](auto kern) {
        kern<<<blocks, THREADS, smem, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                out.data_ptr<float>(), N, Ci, Co, D, H, W, FD, FH, FW);
    };
    if (K == 3) launch(conv_softmax_pool_fused<3>);
    else if (K == 5) launch(conv_softmax_pool_fused<5>);
    else launch(conv_softmax_pool_fused<1>);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="i7_df_conv3d_c3", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["conv_softmax_pool2"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)  # parameters only; see forward
        self.pool = pool_kernel_size

    def forward(self, x):
        return ext.conv_softmax_pool2(x, self.conv.weight, self.conv.bias, self.pool)
