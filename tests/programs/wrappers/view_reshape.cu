// style: view/reshape/permute chains and sizes()
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
torch::Tensor f(torch::Tensor x) {
    auto sizes = x.sizes().vec();
    auto y = x.reshape({-1, sizes.back()}).permute({1, 0}).contiguous();
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y.view(x.sizes()).flatten(1).unsqueeze(0).squeeze(0);
}
