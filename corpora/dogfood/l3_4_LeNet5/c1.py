# Candidate 1 (naive, correct): LeNet-5 layer by layer, eleven launches: direct Conv2d (one thread
# per output), ReLU, MaxPool2d(2), twice; then three Linear layers as one-thread-per-output dot
# products (the threads of a warp read weight rows 400 floats apart), with ReLU kernels between.
# Every intermediate goes through global memory. Grid-stride loops, fp32 throughout.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = ("torch::Tensor lenet5_fwd(torch::Tensor x, torch::Tensor c1w, torch::Tensor c1b, torch::Tensor c2w, "
           "torch::Tensor c2b, torch::Tensor f1w, torch::Tensor f1b, torch::Tensor f2w, torch::Tensor f2b, "
           "torch::Tensor f3w, torch::Tensor f3b);")

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;

__global__ void conv2d_naive(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                             float* __restrict__ y, long total, int Ci, int Co, int H, int W, int K, int OH, int OW) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW);
        const int oh = (int)((i / OW) % OH);
        const int co = (int)((i / ((long)OW * OH)) % Co);
        const long n = i / ((long)OW * OH * Co);
        float acc = b[co];
        for (int ci = 0; ci < Ci; ++ci)
            for (int kh = 0; kh < K; ++kh)
                for (int kw = 0; kw < K; ++kw)
                    acc += w[((co * Ci + ci) * K + kh) * K + kw] * x[((n * Ci + ci) * H + oh + kh) * (long)W + ow + kw];
        y[i] = acc;
    }
}

__global__ void relu_inplace(float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = y[i];
        y[i] = v > 0.f ? v : (isnan(v) ? v : 0.f);
    }
}

__global__ void maxpool2(const float* __restrict__ x, float* __restrict__ y, long total, int H, int W, int PH, int PW) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int pw = (int)(i % PW);
        const int ph = (int)((i / PW) % PH);
        const long plane = i / ((long)PW * PH);
        const float* xp = x + plane * H * (long)W + (long)(2 * ph) * W + 2 * pw;
        float m = -INFINITY;
        const float v[4] = {xp[0], xp[1], xp[W], xp[W + 1]};
        for (int k = 0; k < 4; ++k) if (v[k] > m || isnan(v[k])) m = v[k];
        y[i] = m;
    }
}

// y[n, o] = b[o] + sum_k x[n, k] * w[o, k]
__global__ void linear_naive(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                             float* __restrict__ y, long rows, int in_f, int out_f) {
    const long total = rows * out_f;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int o = (int)(i % out_f);
        const long n = i / out_f;
        float acc = 0.f;
        for (int k = 0; k < in_f; ++k) acc += x[n * in_f + k] * w[(long)o * in_f + k];
        y[i] = acc + b[o];
    }
}

static long grid_for(long work) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    return std::max<long>(1, std::min<long>((work + THREADS - 1) / THREADS, (long)sms * 16));
}

static torch::Tensor conv_relu_pool(torch::Tensor x, torch::Tensor w, torch::Tensor b, cudaStream_t stream) {
    const long N = x.size(0);
    const int Ci = (int)x.size(1), H = (int)x.size(2), W = (int)x.size(3), Co = (int)w.size(0), K = (int)w.size(2);
    const int OH = H - K + 1, OW = W - K + 1;
    auto conv = at::empty({N, Co, OH, OW}, x.options());
    long total = conv.numel();
    conv2d_naive<<<grid_for(total), THREADS, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                          conv.data_ptr<float>(), total, Ci, Co, H, W, K, OH, OW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    relu_inplace<<<grid_for(total), THREADS, 0, stream>>>(conv.data_ptr<float>(), total);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    auto pooled = at::empty({N, Co, OH / 2, OW / 2}, x.options());
    total = pooled.numel();
    maxpool2<<<grid_for(total), THREADS, 0, stream>>>(conv.data_ptr<float>(), pooled.data_ptr<float>(), total, OH, OW,
                                                      OH / 2, OW / 2);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return pooled;
}

static torch::Tensor linear(torch::Tensor x, torch::Tensor w, torch::Tensor b, bool relu, cudaStream_t stream) {
    const long rows = x.size(0);
    const int in_f = (int)w.size(1), out_f = (int)w.size(0);
    auto y = at::empty({rows, out_f}, x.options());
    linear_naive<<<grid_for(rows * out_f), THREADS, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(),
                                                                 b.data_ptr<float>(), y.data_ptr<float>(), rows, in_f,
                                                                 out_f);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (relu) {
        relu_inplace<<<grid_for(y.numel()), THREADS, 0, stream>>>(y.data_ptr<float>(), y.numel());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}

torch::Tensor lenet5_fwd(torch::Tensor x, torch::Tensor c1w, torch::Tensor c1b, torch::Tensor c2w, torch::Tensor c2b,
                         torch::Tensor f1w, torch::Tensor f1b, torch::Tensor f2w, torch::Tensor f2b, torch::Tensor f3w,
                         torch::Tensor f3b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 4 && x.size(1) == 1
                && x.size(2) == 32 && x.size(3) == 32, "(N, 1, 32, 32) float32 CUDA input");
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    auto h = conv_relu_pool(x.contiguous(), c1w.contiguous(), c1b.contiguous(), stream);   // (N, 6, 14, 14)
    h = conv_relu_pool(h, c2w.contiguous(), c2b.contiguous(), stream);                      // (N, 16, 5, 5)
    h = h.view({h.size(0), -1});                                                            // (N, 400)
    h = linear(h, f1w.contiguous(), f1b.contiguous(), true, stream);
    h = linear(h, f2w.contiguous(), f2b.contiguous(), true, stream);
    return linear(h, f3w.contiguous(), f3b.contiguous(), false, stream);
}
"""

ext = load_inline(name="i7_df_lenet_c1", cpp_sources=cpp_src, cuda_sources=cuda_src,
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
