// style: dynamic shared memory reduction, size_t sizes, const_data_ptr / mutable_data_ptr
#include <torch/extension.h>
__global__ void rowsum(const float* x, float* y, int cols) {
    extern __shared__ float s[];
    float acc = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[blockIdx.x * cols + c];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) { if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w]; __syncthreads(); }
    if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}
torch::Tensor f(torch::Tensor x) {
    const int64_t rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows}, x.options());
    rowsum<<<rows, 256, 256 * sizeof(float)>>>(x.const_data_ptr<float>(), y.mutable_data_ptr<float>(), cols);
    return y;
}
