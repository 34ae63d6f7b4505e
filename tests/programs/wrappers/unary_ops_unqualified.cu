// style: using namespace torch; unqualified operators, and an unqualified factory torch and ATen both declare
// expect: error
#include <torch/extension.h>
using namespace torch;
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.5f; }
Tensor f(Tensor x) {
    Tensor y = empty_like(x);  // torch::empty_like and at::empty_like (found through x): ambiguous
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return relu(y) + sigmoid(x) * exp(-x);
}
