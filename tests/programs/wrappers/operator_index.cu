// style: operator[] and .index() with TensorIndexing
#include <torch/extension.h>
using namespace torch::indexing;
__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
torch::Tensor f(torch::Tensor x) {
    auto y = x.clone();
    k<<<1, 32>>>(y.data_ptr<float>(), 32);
    auto row = y[0];
    return y.index({Slice(), 0}) + row[0];
}
