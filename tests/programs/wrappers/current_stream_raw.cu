// style: the raw cudaStream_t of the current stream and device properties
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void k(float* y, int n) { for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 1.f; }
torch::Tensor f(torch::Tensor x) {
    cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
    int blocks = prop->multiProcessorCount * 4;
    auto y = torch::empty_like(x);
    k<<<blocks, 256, 0, stream>>>(y.data_ptr<float>(), y.numel());
    AT_CUDA_CHECK(cudaGetLastError());
    return y;
}
