// style: ATen/core/Tensor.h and ATen/Dispatch.h only, with at::zeros
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/zeros.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 3.f; }
at::Tensor f(const at::Tensor& x) {
    auto y = at::zeros(x.sizes(), x.options());
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y;
}
