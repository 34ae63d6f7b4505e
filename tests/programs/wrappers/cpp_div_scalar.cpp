// style: a C++ candidate dividing its output tensor by a float (issue 15, the CPU path)
// functions: mean_all
#include <torch/extension.h>
torch::Tensor mean_all(torch::Tensor x) {
    auto out = torch::zeros({1}, x.options());
    const float* p = x.data_ptr<float>();
    float acc = 0.f;
    int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) acc += p[i];
    out.fill_(acc);
    return out / (float)n;
}
