// style: a genuine error of the candidate's own: a typo in its own name (fails on every rung)
// expect: error
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
torch::Tensor f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int total = y.numel();
    k<<<(totl + 255) / 256, 256>>>(y.data_ptr<float>(), total);
    return y;
}
