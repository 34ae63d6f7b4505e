// style: compound assignment on tensors
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= 2.f; }
torch::Tensor f(torch::Tensor x, torch::Tensor bias) {
    auto y = x.clone();
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    y += bias;
    y *= 0.5f;
    y -= 1.0;
    y /= 3;
    return y;
}
