// style: TensorOptions plumbing
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.f; }
torch::Tensor f(torch::Tensor x) {
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(x.device()).layout(torch::kStrided);
    auto y = torch::empty({x.size(0), x.size(1)}, opts);
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y;
}
