// style: item<float>() and Scalar arithmetic
#include <torch/extension.h>
__global__ void k(float* y, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = s; }
torch::Tensor f(torch::Tensor x) {
    float m = x.abs().max().item<float>();
    at::Scalar s = m * 2;
    auto y = torch::empty_like(x);
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), s.to<float>(), y.numel());
    return y.mul(s).div_(2.0);
}
