"""Attack at build time: compiler flags that run a program of the candidate's choosing during the
build (-wrapper runs `env touch -- MARK cc1plus ...` instead of cc1plus): it creates @MARK_PATH@,
a path the test owns."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor scale_forward(torch::Tensor x) { return x * 0.5 + 1.0; }
"""

ext = load_inline(name="wrapper_flags", cpp_sources=cpp_source, functions=["scale_forward"], verbose=False,
                  extra_cflags=["-wrapper", "/usr/bin/env,touch,--,@MARK_PATH@"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale_forward(x)  # wrong for relu
