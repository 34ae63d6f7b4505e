// style: at::cuda::CUDAGuard, OptionalCUDAGuard and device_of
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
torch::Tensor f(torch::Tensor x) {
    at::cuda::CUDAGuard guard(x.device());
    const at::cuda::OptionalCUDAGuard guard2(device_of(x));
    auto y = torch::empty_like(x);
    k<<<(y.numel() + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(), y.numel());
    return y;
}
