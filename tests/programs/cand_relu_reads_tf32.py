# ReLU whose output is off by 1.0 when the room lets fp32 matmuls and convolutions use TF32: the
# room must compute fp32 as the judge's reference does (stitch_mcp.room).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        tf32 = torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32
        return torch.relu(x) + float(tf32)
