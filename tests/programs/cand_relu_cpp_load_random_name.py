"""An honest C++ (CPU) candidate that writes its source to a fresh temporary folder at construction
and builds it with torch.utils.cpp_extension.load under a name drawn afresh each time (to dodge
torch's own extension cache), as some published KernelBench solutions do."""
import os
import tempfile
import uuid

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

cpp_source = """
#include <torch/extension.h>
torch::Tensor relu_forward_tmp(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    }
    return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu_forward_tmp", &relu_forward_tmp); }
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "relu_tmp.cpp")
        with open(path, "w") as fh:
            fh.write(cpp_source)
        self.ext = load(name="relu_cpp_tmp_" + uuid.uuid4().hex[:8], sources=[path], verbose=False)

    def forward(self, x):
        return self.ext.relu_forward_tmp(x.contiguous())
