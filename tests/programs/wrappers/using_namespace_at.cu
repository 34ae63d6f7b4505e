// style: using namespace at; at::native-free wrapper calling cat and stack
#include <ATen/ATen.h>
using namespace at;
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
Tensor f(const Tensor& a, const Tensor& b) {
    Tensor y = cat({a, b}, 0);
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return stack({y, y}, 0);
}
