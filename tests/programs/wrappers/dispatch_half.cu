// style: AT_DISPATCH_FLOATING_TYPES_AND_HALF and AT_DISPATCH_FLOATING_TYPES_AND2 with bfloat16
#include <torch/extension.h>
template <typename scalar_t>
__global__ void scale_kernel(scalar_t* y, float s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = static_cast<scalar_t>(static_cast<float>(y[i]) * s);
}
torch::Tensor scale(torch::Tensor x, double s) {
    auto y = x.clone();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(y.scalar_type(), "scale", ([&] {
        scale_kernel<scalar_t><<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<scalar_t>(), (float)s, y.numel());
    }));
    AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, y.scalar_type(), "scale2", [&] {
        scale_kernel<scalar_t><<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<scalar_t>(), 1.0f, y.numel());
    });
    return y;
}
