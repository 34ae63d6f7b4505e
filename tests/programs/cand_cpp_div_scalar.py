"""An honest C++ candidate whose wrapper does arithmetic on its output tensor (`y / (float)n`):
the division is declared outside ATen's per-operator headers (issue 15), so the binding file
must climb to the full header and build, never report a compile error."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor relu_scaled(torch::Tensor x, int64_t n) {
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] * n : 0.0f;
    return y / (float)n;
}
"""

ext = load_inline(name="relu_div_cpp", cpp_sources=cpp_source, functions=["relu_scaled"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_scaled(x.contiguous(), 4)
