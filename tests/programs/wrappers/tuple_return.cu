// style: std::tuple returns and std::get
#include <torch/extension.h>
#include <tuple>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
std::tuple<torch::Tensor, torch::Tensor> f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    k<<<1, 256>>>(y.data_ptr<float>(), y.numel());
    auto t = std::make_tuple(y, x);
    return {std::get<0>(t), std::get<1>(t)};
}
