// style: a templated launcher with block size as a template parameter
#include <torch/extension.h>
template <int BLOCK, typename T>
__global__ void k(const T* __restrict__ x, T* __restrict__ y, int n) {
    __shared__ T tile[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    if (i < n) y[i] = tile[threadIdx.x];
}
template <int BLOCK>
void launch(const torch::Tensor& x, torch::Tensor& y) {
    k<BLOCK, float><<<(x.numel() + BLOCK - 1) / BLOCK, BLOCK>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
}
torch::Tensor f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    if (x.numel() > 1 << 20) launch<512>(x, y); else launch<128>(x, y);
    return y;
}
