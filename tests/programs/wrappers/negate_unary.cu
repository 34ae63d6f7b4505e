// style: unary minus, abs, pow and comparisons against scalars in the return
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = y[i] * y[i]; }
torch::Tensor f(torch::Tensor x) {
    auto y = x.clone();
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return (-y).abs().pow(2) * (y != 0);
}
