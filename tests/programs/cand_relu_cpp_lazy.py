"""An honest C++ (CPU) candidate that builds on its first forward (load_inline cached in a module
global), as many published KernelBench solutions do."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor relu_forward_lazy(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    }
    return y;
}
"""

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="relu_cpp_lazy", cpp_sources=cpp_source, functions=["relu_forward_lazy"],
                           verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _get_ext().relu_forward_lazy(x.contiguous())
