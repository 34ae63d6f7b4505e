

class _CudaReLU(nn.Module):
    def forward(self, x):
        return ext.relu_f4(x.contiguous())


class ModelNew(Model):
    """The reference network with every nn.ReLU replaced by the custom CUDA ReLU."""

    def __init__(self, *args):
        super().__init__(*args)
        for module in list(self.modules()):
            for name, child in list(module.named_children()):
                if isinstance(child, nn.ReLU):
                    setattr(module, name, _CudaReLU())
