// style: default arguments and optional tensors
#include <torch/extension.h>
__global__ void k(float* y, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= s; }
torch::Tensor f(torch::Tensor x, c10::optional<torch::Tensor> bias = c10::nullopt, double scale = 1.0, int64_t dim = -1) {
    auto y = x.clone();
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), (float)scale, y.numel());
    if (bias.has_value()) y.add_(bias.value());
    return y;
}
