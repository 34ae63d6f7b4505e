// style: a genuine error of the candidate's own: a tensor where a pointer is needed (fails on every rung)
// expect: error
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
torch::Tensor f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    k<<<(y.numel() + 255) / 256, 256>>>(y, y.numel());
    return y;
}
