# Candidate 1 (naive, correct): the reference op by op, four launches and three full-size
# intermediates: a direct Conv3d with one thread per output element (weights and inputs read from
# global memory for every multiply), softmax over channels with one thread per position, and two
# MaxPool3d passes with one thread per output. All loops are grid-stride, fp32 throughout.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor conv_softmax_pool2(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t pool);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;

__global__ void conv3d_naive(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                             float* __restrict__ y, long total, int Ci, int Co, int K, int D, int H, int W,
                             int OD, int OH, int OW) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW);
        const int oh = (int)((i / OW) % OH);
        const int od = (int)((i / ((long)OW * OH)) % OD);
        const int co = (int)((i / ((long)OW * OH * OD)) % Co);
        const long n = i / ((long)OW * OH * OD * Co);
        float acc = b[co];
        for (int ci = 0; ci < Ci; ++ci)
            for (int kd = 0; kd < K; ++kd)
                for (int kh = 0; kh < K; ++kh)
                    for (int kw = 0; kw < K; ++kw)
                        acc += w[(((co * Ci + ci) * K + kd) * K + kh) * K + kw]
                             * x[(((n * Ci + ci) * D + od + kd) * H + oh + kh) * (long)W + ow + kw];
        y[i] = acc;
    }
}

// softmax over dim 1 of (N, C, S): one thread per (n, s)
__global__ void softmax_dim1(const float* __restrict__ y, float* __restrict__ out, long npos, int C, long S) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < npos; i += (long)gridDim.x * blockDim.x) {
        const long n = i / S, s = i % S;
        const float* src = y + n * C * S + s;
        float* dst = out + n * C * S + s;
        float m = -INFINITY;
        for (int c = 0; c < C; ++c) m = fmaxf(m, src[c * S]);
        float sum = 0.f;
        for (int c = 0; c < C; ++c) sum += expf(src[c * S] - m);
        for (int c = 0; c < C; ++c) dst[c * S] = expf(src[c * S] - m) / sum;
    }
}

// MaxPool3d(kernel=stride=P, no padding), NaN propagates as in PyTorch
__global__ void maxpool3d(const float* __restrict__ x, float* __restrict__ y, long total, int D, int H, int W,
                          int PD, int PH, int PW, int P) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int pw = (int)(i % PW);
        const int ph = (int)((i / PW) % PH);
        const int pd = (int)((i / ((long)PW * PH)) % PD);
        const long plane = i / ((long)PW * PH * PD);
        const float* xp = x + plane * D * (long)H * W;
        float m = -INFINITY;
        for (int a = 0; a < P; ++a)
            for (int c = 0; c < P; ++c)
                for (int e = 0; e < P; ++e) {
                    float v = xp[((long)(pd * P + a) * H + ph * P + c) * W + pw * P + e];
                    if (v > m || isnan(v)) m = v;
                }
        y[i] = m;
    }
}

static long grid_for(long work) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    return std::max<long>(1, std::min<long>((work + THREADS - 1) / THREADS, (long)sms * 16));
}

torch::Tensor conv_softmax_pool2(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t pool) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 5, "(N, C, D, H, W) float32 CUDA input");
    TORCH_CHECK(w.dim() == 5 && w.size(1) == x.size(1) && w.size(2) == w.size(3) && w.size(3) == w.size(4),
                "cubic Conv3d weight expected");
    x = x.contiguous(); w = w.contiguous(); b = b.contiguous();
    const int N = (int)x.size(0), Ci = (int)x.size(1), D = (int)x.size(2), H = (int)x.size(3), W = (int)x.size(4);
    const int Co = (int)w.size(0), K = (int)w.size(2), P = (int)pool;
    const int OD = D - K + 1, OH = H - K + 1, OW = W - K + 1;
    const int P1D = OD / P, P1H = OH / P, P1W = OW / P;
    const int P2D = P1D / P, P2H = P1H / P, P2W = P1W / P;
    TORCH_CHECK(P2D > 0 && P2H > 0 && P2W > 0, "input too small");
    auto opts = x.options();
    auto conv = at::empty({N, Co, OD, OH, OW}, opts);
    auto soft = at::empty_like(conv);
    auto p1 = at::empty({N, Co, P1D, P1H, P1W}, opts);
    auto p2 = at::empty({N, Co, P2D, P2H, P2W}, opts);
    auto stream = at::cuda::getCurrentCUDAStream();
    long total = conv.numel();
    conv3d_naive<<<grid_for(total), THREADS, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                          conv.data_ptr<float>(), total, Ci, Co, K, D, H, W, OD, OH, OW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const long S = (long)OD * OH * OW;
    softmax_dim1<<<grid_for(N * S), THREADS, 0, stream>>>(conv.data_ptr<float>(), soft.data_ptr<float>(), N * S, Co, S);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    total = p1.numel();
    maxpool3d<<<grid_for(total), THREADS, 0, stream>>>(soft.data_ptr<float>(), p1.data_ptr<float>(), total,
                                                       OD, OH, OW, P1D, P1H, P1W, P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    total = p2.numel();
    maxpool3d<<<grid_for(total), THREADS, 0, stream>>>(p1.data_ptr<float>(), p2.data_ptr<float>(), total,
                                                       P1D, P1H, P1W, P2D, P2H, P2W, P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return p2;
}
"""

ext = load_inline(name="i7_df_conv3d_c1", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["conv_softmax_pool2"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)  # parameters only; see forward
        self.pool = pool_kernel_size

    def forward(self, x):
        return ext.conv_softmax_pool2(x, self.conv.weight, self.conv.bias, self.pool)
