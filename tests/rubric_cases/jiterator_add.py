import torch
import torch.nn as nn

code_string = "template <typename T> T add_kernel(T a, T b) { return a + b; }"
_add = torch.cuda.jiterator._create_jit_fn(code_string)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _add(a, b)
