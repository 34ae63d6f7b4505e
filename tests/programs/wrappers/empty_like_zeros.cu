// style: torch::empty_like, at::zeros, torch::ones with sizes
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.f; }
torch::Tensor f(torch::Tensor x) {
    auto a = torch::empty_like(x);
    auto b = at::zeros({x.size(0)}, x.options());
    auto c = torch::ones({2, 3}, torch::dtype(torch::kFloat32).device(x.device()));
    k<<<(a.numel() + 255) / 256, 256>>>(a.data_ptr<float>(), a.numel());
    return a + b.unsqueeze(1) + c.sum();
}
