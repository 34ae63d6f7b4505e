// style: index_select, slicing and narrow in the wrapper
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = -y[i]; }
torch::Tensor f(torch::Tensor x, torch::Tensor idx) {
    auto y = x.index_select(0, idx).contiguous();
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y.narrow(1, 0, 2).slice(0, 0, 1);
}
