// style: torch::matmul / addmm in the wrapper, a custom epilogue kernel
#include <torch/extension.h>
__global__ void gelu(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float v = y[i]; y[i] = 0.5f * v * (1.f + erff(v * 0.70710678f)); } }
torch::Tensor f(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = torch::addmm(b, x, w.t());
    auto z = torch::matmul(x, w.transpose(0, 1)).contiguous();
    gelu<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y + 0 * z;
}
