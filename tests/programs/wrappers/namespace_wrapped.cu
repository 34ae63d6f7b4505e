// style: kernels and wrapper inside a namespace, exported with a free function
#include <torch/extension.h>
namespace mykern {
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 7.f; }
torch::Tensor run(const torch::Tensor& x) {
    auto y = at::empty(x.sizes(), x.options());
    k<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel());
    return y;
}
}  // namespace mykern
torch::Tensor forward(torch::Tensor x) { return mykern::run(x); }
