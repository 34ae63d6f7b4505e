# Depthwise Conv2d with a (3, 1) kernel (stride 1, no padding, no bias here). PyTorch's fp32
# depthwise path computes one output per thread with scalar loads. Fast path (stride 1, dilation 1,
# no padding, width % 4 == 0, kernel height <= 7, kernel width 1): each thread owns a float4 column
# of a strip of 8 output rows and slides a window of input rows through registers, so each input
# row is loaded once per strip (not KH times); the strips are walked with a grid-stride loop.
# Anything else uses a grid-stride one-thread-per-output kernel.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = ("torch::Tensor depthwise_conv2d_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, "
           "int64_t stride, int64_t padding, int64_t dilation);")

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int R = 8;  // output rows per strip

template <int KH>
__global__ void __launch_bounds__(THREADS) dw_colk_vec(const float4* __restrict__ x, const float* __restrict__ w,
                                                       const float* __restrict__ bias, float4* __restrict__ y,
                                                       long planes, int C, int H, int OH, int W4) {
    const int strips = (OH + R - 1) / R;
    const long total = planes * strips * (long)W4;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int c4 = (int)(i % W4);
        const long t = i / W4;
        const int oh0 = (int)(t % strips) * R;
        const long plane = t / strips;
        const int ch = (int)(plane % C);
        float wk[KH];
        #pragma unroll
        for (int k = 0; k < KH; ++k) wk[k] = __ldg(w + ch * KH + k);
        const float b0 = bias != nullptr ? __ldg(bias + ch) : 0.f;
        const float4* xp = x + plane * (long)H * W4 + c4;
        float4* yp = y + plane * (long)OH * W4 + c4;
        float4 win[KH];
        #pragma unroll
        for (int k = 0; k < KH - 1; ++k) win[k] = xp[(long)(oh0 + k) * W4];
        #pragma unroll
        for (int r = 0; r < R; ++r) {
            const int oh = oh0 + r;
            if (oh >= OH) break;
            win[KH - 1] = xp[(long)(oh + KH - 1) * W4];
            float4 acc = make_float4(b0, b0, b0, b0);
            #pragma unroll
            for (int k = 0; k < KH; ++k) {
                acc.x += wk[k] * win[k].x;
                acc.y += wk[k] * win[k].y;
                acc.z += wk[k] * win[k].z;
                acc.w += wk[k] * win[k].w;
            }
            yp[(long)oh * W4] = acc;
            #pragma unroll
            for (int k = 0; k < KH - 1; ++k) win[k] = win[k + 1];
        }
    }
}

__global__ void dw_generic(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                           float* __restrict__ y, long total, int C, int H, int W, int OH, int OW, int KH, int KW,
                           int s, int p, int d) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW);
        const int oh = (int)((i / OW) % OH);
        const long plane = i / ((long)OW * OH);
        const int ch = (int)(plane % C);
        const float* xp = x + plane * (long)H * W;
        float acc = bias != nullptr ? bias[ch] : 0.f;
        for (int kh = 0; kh < KH; ++kh) {
            const int hh = oh * s - p + kh * d;
            if (hh < 0 || hh >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int ww = ow * s - p + kw * d;
                if (ww < 0 || ww >= W) continue;
                acc += __ldg(w + (ch * KH + kh) * KW + kw) * __ldg(xp + (long)hh * W + ww);
            }
        }
        y[i] = acc;
    }
}

torch::Tensor depthwise_conv2d_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t stride,
                                   int64_t padding, int64_t dilation) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 4, "(N, C, H, W) float32 CUDA input");
    TORCH_CHECK(w.dim() == 4 && w.size(0) == x.size(1) && w.size(1) == 1, "depthwise weight (C, 1, KH, KW)");
    x = x.contiguous();
    w = w.contiguous();
    const float* bp = nullptr;
    if (b.numel() > 0) {
        b = b.contiguous();
        bp = b.data_ptr<float>();
    }
    const int C = (int)x.size(1), H = (int)x.size(2), W = (int)x.size(3);
    const int KH = (int)w.size(2), KW = (int)w.size(3);
    const int s = (int)stride, p = (int)padding, d = (int)dilation;
    const int OH = (H + 2 * p - d * (KH - 1) - 1) / s + 1;
    const int OW = (W + 2 * p - d * (KW - 1) - 1) / s + 1;
    TORCH_CHECK(OH > 0 && OW > 0, "output would be empty");
    auto y = at::empty({x.size(0), C, OH, OW}, x.options());
    const long planes = x.size(0) * (long)C;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    auto stream = at::cuda::getCurrentCUDAStream();
    auto aligned = [](const float* q) { return (reinterpret_cast<uintptr_t>(q) & 15) == 0; };
    const bool fast = s == 1 && d == 1 && p == 0 && KW == 1 && KH >= 1 && KH <= 7 && W % 4 == 0
                      && aligned(x.data_ptr<float>()) && aligned(y.data_ptr<float>());
    if (fast) {
        const int W4 = W / 4;
        const long total = planes * ((OH + R - 1) / R) * (long)W4;
        const long blocks = std::max<long>(1, std::min<long>((total + THREADS - 1) / THREADS, (long)sms * 16));
        const float4* x4 = reinterpret_cast<const float4*>(x.data_ptr<float>());
        float4* y4 = reinterpret_cast<float4*>(y.data_ptr<float>());
        const float* wp = w.data_ptr<float>();
        switch (KH) {
            case 1: dw_colk_vec<1><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
            case 2: dw_colk_vec<2><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
            case 3: dw_colk_vec<3><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
            case 4: dw_colk_vec<4><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
            case 5: dw_colk_vec<5><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
            case 6: dw_colk_vec<6><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
            default: dw_colk_vec<7><<<blocks, THREADS, 0, stream>>>(x4, wp, bp, y4, planes, C, H, OH, W4); break;
        }
    } else {
        const long total = planes * OH * (long)OW;
        const long blocks = std::max<long>(1, std::min<long>((total + THREADS - 1) / THREADS, (long)sms * 16));
        dw_generic<<<blocks, THREADS, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), bp, y.data_ptr<float>(),
                                                   total, C, H, W, OH, OW, KH, KW, s, p, d);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="i7_l1_83_depthwise", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["depthwise_conv2d_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1,
                 bias: bool = False):
        super().__init__()
        # holds the weight (and bias) under the reference's names; forward runs the kernel above
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size=(kernel_size, 1), stride=stride,
                                padding=padding, dilation=dilation, groups=in_channels, bias=bias)
        self.stride, self.padding, self.dilation = stride, padding, dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.conv2d.weight
        b = self.conv2d.bias if self.conv2d.bias is not None else w.new_empty(0)
        return ext.depthwise_conv2d_fwd(x, w, b, self.stride, self.padding, self.dilation)
