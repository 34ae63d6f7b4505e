// style: using namespace torch; unqualified operators, a qualified factory
#include <torch/extension.h>
using namespace torch;
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.5f; }
Tensor f(Tensor x) {
    Tensor y = torch::empty_like(x);
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return relu(y) + sigmoid(x) * exp(-x);
}
