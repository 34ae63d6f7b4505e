# Candidate 2 (fused stages, tiled linear layers): five launches instead of eleven.
#   conv_relu_pool: one thread per pooled output computes its 2x2 conv outputs (weights staged in
#     shared memory), applies ReLU and the max in registers; the unpooled conv output never goes
#     to global memory.
#   linear_tiled: Linear (+ ReLU) as a 32x32 shared-memory tiled matmul (x tile and weight tile
#     loaded coalesced, K in steps of 32) with the bias and ReLU in the epilogue.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = ("torch::Tensor lenet5_fwd(torch::Tensor x, torch::Tensor c1w, torch::Tensor c1b, torch::Tensor c2w, "
           "torch::Tensor c2b, torch::Tensor f1w, torch::Tensor f1b, torch::Tensor f2w, torch::Tensor f2b, "
           "torch::Tensor f3w, torch::Tensor f3b);")

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;
constexpr int T = 32;  // linear tile

__device__ __forceinline__ float relu_f(float v) { return v > 0.f ? v : (isnan(v) ? v : 0.f); }
__device__ __forceinline__ float nanmax(float a, float b) { return (b > a || isnan(b)) ? b : a; }

template <int K>
__global__ void __launch_bounds__(THREADS) conv_relu_pool(const float* __restrict__ x, const float* __restrict__ w,
                                                          const float* __restrict__ b, float* __restrict__ y,
                                                          long total, int Ci, int Co, int H, int W, int PH, int PW) {
    extern __shared__ float ws[];  // [Co][Ci][K][K], then bias[Co]
    const int nw = Co * Ci * K * K;
    for (int i = threadIdx.x; i < nw; i += THREADS) ws[i] = w[i];
    for (int i = threadIdx.x; i < Co; i += THREADS) ws[nw + i] = b[i];
    __syncthreads();
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int pw = (int)(i % PW);
        const int ph = (int)((i / PW) % PH);
        const int co = (int)((i / ((long)PW * PH)) % Co);
        const long n = i / ((long)PW * PH * Co);
        float a00 = ws[nw + co], a01 = a00, a10 = a00, a11 = a00;
        for (int ci = 0; ci < Ci; ++ci) {
            const float* xp = x + ((n * Ci + ci) * H + 2 * ph) * (long)W + 2 * pw;
            const float* wp = ws + (co * Ci + ci) * K * K;
            #pragma unroll
            for (int kh = 0; kh < K; ++kh)
                #pragma unroll
                for (int kw = 0; kw < K; ++kw) {
                    const float wv = wp[kh * K + kw];
                    a00 += wv * __ldg(xp + kh * W + kw);
                    a01 += wv * __ldg(xp + kh * W + kw + 1);
                    a10 += wv * __ldg(xp + (kh + 1) * W + kw);
                    a11 += wv * __ldg(xp + (kh + 1) * W + kw + 1);
                }
        }
        y[i] = nanmax(nanmax(nanmax(relu_f(a00), relu_f(a01)), relu_f(a10)), relu_f(a11));
    }
}

// y[n, o] = act(b[o] + sum_k x[n, k] * w[o, k]), 32x32 output tile per block (1024 threads / 4: 4 rows each)
__global__ void __launch_bounds__(THREADS) linear_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                                        const float* __restrict__ b, float* __restrict__ y,
                                                        int rows, int in_f, int out_f, bool relu) {
    __shared__ float xs[T][T + 1];
    __shared__ float wt[T][T + 1];
    const int tx = threadIdx.x % T, ty = threadIdx.x / T;  // ty in 0..7, 4 rows each
    const int tiles_o = (out_f + T - 1) / T;
    const long ntiles = (long)((rows + T - 1) / T) * tiles_o;
    for (long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const int r0 = (int)(t / tiles_o) * T, o0 = (int)(t % tiles_o) * T;
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        for (int k0 = 0; k0 < in_f; k0 += T) {
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int rr = ty + 8 * j;
                const int gr = r0 + rr, go = o0 + rr, gk = k0 + tx;
                xs[rr][tx] = (gr < rows && gk < in_f) ? x[(long)gr * in_f + gk] : 0.f;
                wt[rr][tx] = (go < out_f && gk < in_f) ? w[(long)go * in_f + gk] : 0.f;
            }
            __syncthreads();
            #pragma unroll
            for (int k = 0; k < T; ++k) {
                const float wv = wt[tx][k];
                #pragma unroll
                for (int j = 0; j < 4; ++j) acc[j] += xs[ty + 8 * j][k] * wv;
            }
            __syncthreads();
        }
        const int go = o0 + tx;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int gr = r0 + ty + 8 * j;
            if (gr < rows && go < out_f) {
                const float v = acc[j] + b[go];
                y[(long)gr * out_f + go] = relu ? relu_f(v) : v;
            }
        }
    }
}

static int sm_count() { return at::cuda::getCurrentDeviceProperties()->multiProcessorCount; }

static torch::Tensor conv_stage(torch::Tensor x, torch::Tensor w, torch::Tensor b, cudaStream_t stream) {
    TORCH_CHECK(w.size(2) == 5 && w.size(3) == 5, "5x5 convolutions expected");
    const long N = x.size(0);
    const int Ci = (int)x.size(1), H = (int)x.size(2), W = (int)x.size(3), Co = (int)w.size(0);
    const int PH = (H - 4) / 2, PW = (W - 4) / 2;
    auto y = at::empty({N, Co, PH, PW}, x.options());
    const long total = y.numel();
    const long blocks = std::max<long>(1, std::min<long>((total + THREADS - 1) / THREADS, (long)sm_count() * 8));
    conv_relu_pool<5><<<blocks, THREADS, (w.numel() + Co) * sizeof(float), stream>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), total, Ci, Co, H, W, PH, PW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

static torch::Tensor linear(torch::Tensor x, torch::Tensor w, torch::Tensor b, bool relu, cudaStream_t stream) {
    const int rows = (int)x.size(0), in_f = (int)w.size(1), out_f = (int)w.size(0);
    auto y = at::empty({rows, out_f}, x.options());
    const long ntiles = (long)((rows + T - 1) / T) * ((out_f + T - 1) / T);
    const long blocks = std::max<long>(1, std::min<long>(ntiles, (long)sm_count() * 8));
    linear_tiled<<<blocks, THREADS, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                 y.data_ptr<float>(), rows, in_f, out_f, relu);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

torch::Tensor lenet5_fwd(torch::Tensor x, torch::Tensor c1w, torch::Tensor c1b, torch::Tensor c2w, torch::Tensor c2b,
                         torch::Tensor f1w, torch::Tensor f1b, torch::Tensor f2w, torch::Tensor f2b, torch::Tensor f3w,
                         torch::Tensor f3b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 4 && x.size(1) == 1
                && x.size(2) == 32 && x.size(3) == 32, "(N, 1, 32, 32) float32 CUDA input");
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    auto h = conv_stage(x.contiguous(), c1w.contiguous(), c1b.contiguous(), stream);   // (N, 6, 14, 14)
    h = conv_stage(h, c2w.contiguous(), c2b.contiguous(), stream);                      // (N, 16, 5, 5)
    h = h.view({h.size(0), -1});                                                        // (N, 400)
    h = linear(h, f1w.contiguous(), f1b.contiguous(), true, stream);
    h = linear(h, f2w.contiguous(), f2b.contiguous(), true, stream);
    return linear(h, f3w.contiguous(), f3b.contiguous(), false, stream);
}
"""

ext = load_inline(name="i7_df_lenet_c2", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["lenet5_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        # parameter holders with the reference's names; forward runs the kernels above
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5, stride=1)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=16, kernel_size=5, stride=1)
        self.fc1 = nn.Linear(in_features=16 * 5 * 5, out_features=120)
        self.fc2 = nn.Linear(in_features=120, out_features=84)
        self.fc3 = nn.Linear(in_features=84, out_features=num_classes)

    def forward(self, x):
        return ext.lenet5_fwd(x, self.conv1.weight, self.conv1.bias, self.conv2.weight, self.conv2.bias,
                              self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias,
                              self.fc3.weight, self.fc3.bias)
