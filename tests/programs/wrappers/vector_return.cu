// style: std::vector<torch::Tensor> returns
#include <torch/extension.h>
#include <vector>
__global__ void k(const float* x, float* a, float* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { a[i] = x[i]; b[i] = -x[i]; } }
std::vector<torch::Tensor> split_sign(torch::Tensor x) {
    auto a = torch::empty_like(x), b = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), a.data_ptr<float>(), b.data_ptr<float>(), x.numel());
    return {a, b};
}
