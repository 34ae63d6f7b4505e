// style: tensor + tensor and tensor * scalar in the wrapper
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.f; }
torch::Tensor f(torch::Tensor a, torch::Tensor b) {
    auto y = (a + b) * 0.5;
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y - a;
}
