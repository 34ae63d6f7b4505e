# Candidate 2 (fewer passes, register blocking): two launches instead of four.
#   conv_softmax: one thread per output position computes all output channels (<= 16) in
#     registers, so each input value is loaded once for Co multiplies instead of once per output;
#     the weights sit in shared memory (read as broadcasts); the channel softmax runs in registers in
#     the conv's epilogue, so the raw conv output never reaches global memory.
#   pool2_fused: MaxPool3d twice (kernel = stride = P, floor) is a max over a P*P-wide window per
#     dimension; one pass reads only the positions the two pools use.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor conv_softmax_pool2(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t pool);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int MAXC = 16;          // output channels held in registers
constexpr int MAXW = 8192;        // weights + bias in shared memory (floats)

template <int K>
__global__ void __launch_bounds__(THREADS) conv_softmax(const float* __restrict__ x, const float* __restrict__ w,
                                                        const float* __restrict__ b, float* __restrict__ y,
                                                        long npos, int Ci, int Co, int D, int H, int W,
                                                        int OD, int OH, int OW) {
    extern __shared__ float ws[];  // [Co][Ci][K][K][K] then bias[Co]
    const int nw = Co * Ci * K * K * K;
    for (int i = threadIdx.x; i < nw; i += THREADS) ws[i] = w[i];
    for (int i = threadIdx.x; i < Co; i += THREADS) ws[nw + i] = b[i];
    __syncthreads();
    const long S = (long)OD * OH * OW;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < npos; i += (long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW);
        const int oh = (int)((i / OW) % OH);
        const int od = (int)((i / ((long)OW * OH)) % OD);
        const long n = i / S;
        float acc[MAXC];
        #pragma unroll
        for (int c = 0; c < MAXC; ++c) acc[c] = c < Co ? ws[nw + c] : 0.f;
        for (int ci = 0; ci < Ci; ++ci) {
            const float* xc = x + ((n * Ci + ci) * D + od) * (long)H * W + (long)oh * W + ow;
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
                            if (c < Co) acc[c] += ws[c * Ci * K * K * K + koff] * xv;
                    }
        }
        float m = -INFINITY;
        #pragma unroll
        for (int c = 0; c < MAXC; ++c) if (c < Co) m = fmaxf(m, acc[c]);
        float sum = 0.f;
        #pragma unroll
        for (int c = 0; c < MAXC; ++c) if (c < Co) { acc[c] = expf(acc[c] - m); sum += acc[c]; }
        float* yp = y + n * Co * S + ((long)od * OH + oh) * OW + ow;
        #pragma unroll
        for (int c = 0; c < MAXC; ++c) if (c < Co) yp[c * S] = acc[c] / sum;
    }
}

// MaxPool3d(P) applied twice == max over [P*P*j, P*P*j + P*P) in each dimension (floor sizes).
__global__ void pool2_fused(const float* __restrict__ x, float* __restrict__ y, long total, int D, int H, int W,
                            int FD, int FH, int FW, int G) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int fw = (int)(i % FW);
        const int fh = (int)((i / FW) % FH);
        const int fd = (int)((i / ((long)FW * FH)) % FD);
        const long plane = i / ((long)FW * FH * FD);
        const float* xp = x + plane * D * (long)H * W;
        float m = -INFINITY;
        for (int a = 0; a < G; ++a)
            for (int c = 0; c < G; ++c) {
                const float* row = xp + ((long)(fd * G + a) * H + fh * G + c) * W + fw * G;
                for (int e = 0; e < G; ++e) {
                    float v = row[e];
                    if (v > m || isnan(v)) m = v;
                }
            }
        y[i] = m;
    }
}

torch::Tensor conv_softmax_pool2(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t pool) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 5, "(N, C, D, H, W) float32 CUDA input");
    TORCH_CHECK(w.dim() == 5 && w.size(1) == x.size(1) && w.size(2) == w.size(3) && w.size(3) == w.size(4),
                "cubic Conv3d weight expected");
    x = x.contiguous(); w = w.contiguous(); b = b.contiguous();
    const int N = (int)x.size(0), Ci = (int)x.size(1), D = (int)x.size(2), H = (int)x.size(3), W = (int)x.size(4);
    const int Co = (int)w.size(0), K = (int)w.size(2), P = (int)pool;
    TORCH_CHECK(Co <= MAXC && w.numel() + Co <= MAXW, "up to 16 output channels and 8K weights supported");
    TORCH_CHECK(K == 3 || K == 5 || K == 1, "kernel size 1, 3 or 5 supported");
    const int OD = D - K + 1, OH = H - K + 1, OW = W - K + 1;
    const int FD = OD / P / P, FH = OH / P / P, FW = OW / P / P;
    TORCH_CHECK(FD > 0 && FH > 0 && FW > 0, "input too small");
    auto opts = x.options();
    auto soft = at::empty({N, Co, OD, OH, OW}, opts);
    auto out = at::empty({N, Co, FD, FH, FW}, opts);
    auto stream = at::cuda::getCurrentCUDAStream();
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const long npos = (long)N * OD * OH * OW;
    const long blocks = std::max<long>(1, std::min<long>((npos + THREADS - 1) / THREADS, (long)sms * 8));
    const size_t smem = (w.numel() + Co) * sizeof(float);
    auto launch = [&](auto kern) {
        kern<<<blocks, THREADS, smem, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                soft.data_ptr<float>(), npos, Ci, Co, D, H, W, OD, OH, OW);
    };
    if (K == 3) launch(conv_softmax<3>); else if (K == 5) launch(conv_softmax<5>); else launch(conv_softmax<1>);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const long total = out.numel();
    const long pblocks = std::max<long>(1, std::min<long>((total + THREADS - 1) / THREADS, (long)sms * 16));
    pool2_fused<<<pblocks, THREADS, 0, stream>>>(soft.data_ptr<float>(), out.data_ptr<float>(), total, OD, OH, OW,
                                                 FD, FH, FW, P * P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="i7_df_conv3d_c2", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["conv_softmax_pool2"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)  # parameters only; see forward
        self.pool = pool_kernel_size

    def forward(self, x):
        return ext.conv_softmax_pool2(x, self.conv.weight, self.conv.bias, self.pool)
