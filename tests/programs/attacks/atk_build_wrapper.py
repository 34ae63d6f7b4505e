"""Attack at build time: compiler flags that run a program of the candidate's choosing during the
build (-wrapper runs a shell in front of cc1). The shell writes @MARK_PATH@ (a path the test owns)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor scale_forward(torch::Tensor x) { return x * 0.5 + 1.0; }
"""

ext = load_inline(name="wrapper_flags", cpp_sources=cpp_source, functions=["scale_forward"], verbose=False,
                  extra_cflags=["-wrapper", '/bin/sh,-c,echo pwned > @MARK_PATH@; exec "$0" "$@"'])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale_forward(x)  # wrong for relu
