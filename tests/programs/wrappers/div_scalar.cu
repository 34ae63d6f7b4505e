// style: arithmetic on the output tensor (issue 15: `return out / (float)n;`)
#include <torch/extension.h>
__global__ void sum_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}
torch::Tensor mean_all(torch::Tensor x) {
    auto out = torch::zeros({1}, x.options());
    int n = x.numel();
    sum_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out / (float)n;
}
