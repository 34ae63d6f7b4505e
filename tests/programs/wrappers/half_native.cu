// style: __half kernels fed from at::Half data
#include <torch/extension.h>
#include <cuda_fp16.h>
__global__ void k(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hmul(x[i], __float2half(2.0f));
}
torch::Tensor f(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == at::kHalf);
    auto y = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256>>>(reinterpret_cast<const __half*>(x.data_ptr<at::Half>()),
                                       reinterpret_cast<__half*>(y.data_ptr<at::Half>()), x.numel());
    return y;
}
