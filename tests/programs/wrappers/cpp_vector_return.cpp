// style: a C++ candidate returning std::vector<torch::Tensor> from raw loops, with accessors
// functions: split
#include <torch/extension.h>
#include <vector>
std::vector<torch::Tensor> split(torch::Tensor x) {
    auto a = torch::empty_like(x), b = torch::empty_like(x);
    auto xa = x.accessor<float, 2>();
    auto aa = a.accessor<float, 2>(); auto ba = b.accessor<float, 2>();
    for (int64_t r = 0; r < x.size(0); ++r)
        for (int64_t c = 0; c < x.size(1); ++c) { aa[r][c] = xa[r][c] > 0 ? xa[r][c] : 0; ba[r][c] = xa[r][c] - aa[r][c]; }
    return {a, b};
}
