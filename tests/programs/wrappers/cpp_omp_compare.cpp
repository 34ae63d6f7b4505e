// style: OpenMP loop, then tensor comparisons and where in the return
// functions: clip
#include <torch/extension.h>
torch::Tensor clip(torch::Tensor x, double lo, double hi) {
    auto y = x.contiguous().clone();
    float* p = y.data_ptr<float>();
    #pragma omp parallel for
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = p[i] * 1.0f;
    return torch::where(y < lo, torch::full_like(y, lo), torch::where(y > hi, torch::full_like(y, hi), y));
}
