// style: float4 vectorised kernel with reinterpret_cast of data_ptr
#include <torch/extension.h>
__global__ void k(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) { float4 v = x[i]; v.x *= 2.f; v.y *= 2.f; v.z *= 2.f; v.w *= 2.f; y[i] = v; }
}
torch::Tensor f(torch::Tensor x) {
    TORCH_CHECK(x.numel() % 4 == 0, "numel must be a multiple of 4");
    auto y = torch::empty_like(x);
    int n4 = x.numel() / 4;
    k<<<(n4 + 255) / 256, 256>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                 reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    return y;
}
