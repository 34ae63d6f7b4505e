"""A C++ candidate with a type error on its line 11 (`int* p = v;`); no torch headers so it builds fast."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
int add_one(int v) {
    return v + 1;
}

int broken(int v) {
    int* p = v;
    return *p;
}
"""

ext = load_inline(name="broken_cpp", cpp_sources=cpp_source, functions=None, no_implicit_headers=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return x
