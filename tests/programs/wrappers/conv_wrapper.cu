// style: torch::conv2d / batch_norm helpers around a fused activation kernel
#include <torch/extension.h>
__global__ void relu6(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = fminf(fmaxf(y[i], 0.f), 6.f); }
torch::Tensor f(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = torch::conv2d(x, w, b, /*stride=*/{1, 1}, /*padding=*/{1, 1}).contiguous();
    relu6<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return torch::softmax(y, 1);
}
