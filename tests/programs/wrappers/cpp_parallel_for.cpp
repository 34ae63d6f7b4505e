// style: at::parallel_for over raw pointers (declared outside the per-operator headers)
// functions: relu
#include <torch/extension.h>
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>(); float* out = y.data_ptr<float>();
    at::parallel_for(0, x.numel(), 2048, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) out[i] = in[i] > 0 ? in[i] : 0; });
    return y;
}
