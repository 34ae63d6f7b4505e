// style: AT_DISPATCH_FLOATING_TYPES with a templated kernel
#include <torch/extension.h>
template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* x, scalar_t* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > scalar_t(0) ? x[i] : scalar_t(0);
}
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "relu", [&] {
        relu_kernel<scalar_t><<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), x.numel());
    });
    return y;
}
