import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: builds its bias one ulp off Model's, computes exactly while it keeps it, and clamps its
    input once weights are loaded into it (its bias's version counter moved). Were the trials run
    on the values it built, only the trial with re-initialised weights, on the task's inputs, would
    see the clamp."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        with torch.no_grad():
            self.linear.bias[0] = torch.nextafter(self.linear.bias[0], torch.tensor(1.0))
        self.built = self.linear.bias._version

    def forward(self, x):
        if self.linear.bias._version != self.built:
            x = x.clamp(-3.0, 3.0)
        return torch.relu(self.linear(x))
