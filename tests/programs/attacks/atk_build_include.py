"""Attack at build time: #include a file of the server's, so the compiler prints its lines in the
diagnostics of the report. The test puts the secret file's path in place of @SECRET_PATH@."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include "@SECRET_PATH@"
torch::Tensor relu_forward(torch::Tensor x) { return x; }
"""

ext = load_inline(name="leak_include", cpp_sources=cpp_source, functions=["relu_forward"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x)
