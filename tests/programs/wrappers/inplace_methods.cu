// style: in-place methods and fill/zero/copy
#include <torch/extension.h>
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.f; }
void f(torch::Tensor out, torch::Tensor x) {
    out.zero_();
    out.copy_(x);
    k<<<(out.numel() + 255) / 256, 256>>>(out.data_ptr<float>(), out.numel());
    out.mul_(2).add_(x, /*alpha=*/0.5).clamp_(0, 6);
    x.fill_(0);
}
