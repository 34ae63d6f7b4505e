// style: several exported functions and a helper
#include <torch/extension.h>
__global__ void fwd(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = tanhf(x[i]); }
__global__ void bwd(const float* y, const float* g, float* dx, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dx[i] = g[i] * (1.f - y[i] * y[i]); }
static inline int blocks_for(int64_t n) { return (int)((n + 255) / 256); }
torch::Tensor tanh_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    fwd<<<blocks_for(x.numel()), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
torch::Tensor tanh_backward(torch::Tensor y, torch::Tensor g) {
    auto dx = torch::empty_like(y);
    bwd<<<blocks_for(y.numel()), 256>>>(y.data_ptr<float>(), g.data_ptr<float>(), dx.data_ptr<float>(), y.numel());
    return dx;
}
