// style: a genuine error of the candidate's own in a C++ candidate: an undeclared variable
// functions: f
// expect: error
#include <torch/extension.h>
torch::Tensor f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    for (int64_t i = 0; i < count; ++i) y.data_ptr<float>()[i] = 0;
    return y;
}
