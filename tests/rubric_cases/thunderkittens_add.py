import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

tk_source = r"""
#include "kittens.cuh"
#include <torch/extension.h>
using namespace kittens;

struct add_globals {
    using tile = st_fl<16, 16>;
    using gl_t = gl<float, 1, 1, -1, -1, tile>;
    gl_t A, B, C;
};

__global__ void __launch_bounds__(32, 1) add_tk(const __grid_constant__ add_globals g) {
    rt_fl<16, 16> a, b, c;
    kittens::warp::load(a, g.A, {0, 0, (int)blockIdx.y, (int)blockIdx.x});
    kittens::warp::load(b, g.B, {0, 0, (int)blockIdx.y, (int)blockIdx.x});
    kittens::warp::add(c, a, b);
    kittens::warp::store(g.C, c, {0, 0, (int)blockIdx.y, (int)blockIdx.x});
}

torch::Tensor tk_add(torch::Tensor A, torch::Tensor B) {
    auto C = torch::empty_like(A);
    size_t M = A.size(0), N = A.size(1);
    add_globals::gl_t a{A.data_ptr<float>(), nullptr, nullptr, M, N};
    add_globals::gl_t b{B.data_ptr<float>(), nullptr, nullptr, M, N};
    add_globals::gl_t c{C.data_ptr<float>(), nullptr, nullptr, M, N};
    add_tk<<<dim3(N / 16, M / 16), 32, 0, at::cuda::getCurrentCUDAStream()>>>(add_globals{a, b, c});
    return C;
}
"""

ext = load_inline("tk_add", cpp_sources="torch::Tensor tk_add(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=tk_source, functions=["tk_add"], extra_cuda_cflags=["-std=c++20", "-DKITTENS_HOPPER"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.tk = ext

    def forward(self, a, b):
        return self.tk.tk_add(a, b)
