# MaxPool2d (k=4, s=1, p=1, d=1 here). PyTorch's CUDA path computes max_pool2d_with_indices and
# writes an int64 index per output that nobody reads; this writes only the values. Fast path
# (stride 1, dilation 1, k <= 8): a block stages an input tile (with the halo, -inf outside the
# image) in shared memory, takes the vertical max over the window, then the horizontal max (a
# separable 2-D max), and walks the output tiles with a grid-stride loop. Other settings use a
# grid-stride one-thread-per-output kernel. NaN propagates as in PyTorch.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor max_pool2d_fwd(torch::Tensor x, int64_t k, int64_t s, int64_t p, int64_t d);"

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int TH = 32, TW = 64, KMAX = 8;
constexpr int IH = TH + KMAX - 1, IWP = TW + KMAX;  // smem rows, padded row length

__device__ __forceinline__ float take_max(float m, float v) { return (v > m || isnan(v)) ? v : m; }

__global__ void __launch_bounds__(THREADS) maxpool2d_s1_tiled(const float* __restrict__ x, float* __restrict__ y,
                                                              long planes, int H, int W, int OH, int OW,
                                                              int k, int pad) {
    __shared__ float tile[IH][IWP];
    __shared__ float vmax[TH][IWP];
    const int tiles_h = (OH + TH - 1) / TH, tiles_w = (OW + TW - 1) / TW;
    const long ntiles = planes * tiles_h * tiles_w;
    const int ih = TH + k - 1, iw = TW + k - 1;
    for (long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const long plane = t / (tiles_h * tiles_w);
        const int rem = (int)(t % (tiles_h * tiles_w));
        const int oh0 = (rem / tiles_w) * TH, ow0 = (rem % tiles_w) * TW;
        const float* xp = x + plane * H * (long)W;
        for (int i = threadIdx.x; i < ih * iw; i += THREADS) {
            const int r = i / iw, c = i % iw;
            const int hh = oh0 - pad + r, ww = ow0 - pad + c;
            tile[r][c] = (hh >= 0 && hh < H && ww >= 0 && ww < W) ? __ldg(xp + (long)hh * W + ww) : -INFINITY;
        }
        __syncthreads();
        for (int i = threadIdx.x; i < TH * iw; i += THREADS) {
            const int r = i / iw, c = i % iw;
            float m = tile[r][c];
            for (int kh = 1; kh < k; ++kh) m = take_max(m, tile[r + kh][c]);
            vmax[r][c] = m;
        }
        __syncthreads();
        float* yp = y + plane * OH * (long)OW;
        for (int i = threadIdx.x; i < TH * TW; i += THREADS) {
            const int r = i / TW, c = i % TW;
            const int oh = oh0 + r, ow = ow0 + c;
            if (oh < OH && ow < OW) {
                float m = vmax[r][c];
                for (int kw = 1; kw < k; ++kw) m = take_max(m, vmax[r][c + kw]);
                yp[(long)oh * OW + ow] = m;
            }
        }
        __syncthreads();  // the tiles are reused by the next iteration
    }
}

__global__ void maxpool2d_generic(const float* __restrict__ x, float* __restrict__ y, long total, int H, int W,
                                  int OH, int OW, int k, int s, int pad, int d) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW);
        const int oh = (int)((i / OW) % OH);
        const long plane = i / ((long)OW * OH);
        const float* xp = x + plane * H * (long)W;
        float m = -INFINITY;
        for (int kh = 0; kh < k; ++kh) {
            const int hh = oh * s - pad + kh * d;
            if (hh < 0 || hh >= H) continue;
            for (int kw = 0; kw < k; ++kw) {
                const int ww = ow * s - pad + kw * d;
                if (ww < 0 || ww >= W) continue;
                m = take_max(m, __ldg(xp + (long)hh * W + ww));
            }
        }
        y[i] = m;
    }
}

torch::Tensor max_pool2d_fwd(torch::Tensor x, int64_t k, int64_t s, int64_t p, int64_t d) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 4, "(N, C, H, W) float32 CUDA input");
    TORCH_CHECK(k > 0 && s > 0 && d > 0 && p >= 0 && 2 * p <= k, "unsupported pooling parameters");
    x = x.contiguous();
    const int H = (int)x.size(2), W = (int)x.size(3);
    const int OH = (int)((H + 2 * p - d * (k - 1) - 1) / s + 1);
    const int OW = (int)((W + 2 * p - d * (k - 1) - 1) / s + 1);
    TORCH_CHECK(OH > 0 && OW > 0, "output would be empty");
    auto y = at::empty({x.size(0), x.size(1), OH, OW}, x.options());
    const long planes = x.size(0) * x.size(1);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (s == 1 && d == 1 && k <= KMAX) {
        const long ntiles = planes * ((OH + TH - 1) / TH) * ((OW + TW - 1) / TW);
        const long blocks = std::max<long>(1, std::min<long>(ntiles, (long)sms * 8));
        maxpool2d_s1_tiled<<<blocks, THREADS, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), planes, H, W,
                                                           OH, OW, (int)k, (int)p);
    } else {
        const long total = planes * OH * (long)OW;
        const long blocks = std::max<long>(1, std::min<long>((total + THREADS - 1) / THREADS, (long)sms * 16));
        maxpool2d_generic<<<blocks, THREADS, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), total, H, W,
                                                          OH, OW, (int)k, (int)s, (int)p, (int)d);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="i7_l1_42_maxpool2d", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["max_pool2d_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.max_pool2d_fwd(x, self.k, self.s, self.p, self.d)
