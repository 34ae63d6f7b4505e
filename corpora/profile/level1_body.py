

class ModelNew(torch.nn.Module):
    """ReLU with a vectorized (float4) grid-stride CUDA kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_f4(x.contiguous())
