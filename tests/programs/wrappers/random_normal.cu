// style: torch::randn / rand_like and a generator-free noise kernel
#include <torch/extension.h>
__global__ void k(float* y, const float* noise, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += noise[i]; }
torch::Tensor f(torch::Tensor x) {
    auto noise = torch::randn_like(x) * 0.01;
    auto y = x.clone();
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), noise.data_ptr<float>(), y.numel());
    return y;
}
