import os, sys
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
from stitch_mcp.zygote import gpu_descriptors
print("bare", gpu_descriptors())
import torch; print("torch", gpu_descriptors())
import torch.utils.cpp_extension; print("cpp_extension", gpu_descriptors())
import stitch_mcp.judge; print("judge", gpu_descriptors())
torch.empty(1, device="meta").relu(); print("meta", gpu_descriptors())
from stitch_mcp.correctness import _import_compiler; _import_compiler(); print("compiler", gpu_descriptors())
from stitch_mcp.zygote import _shut_nvml; _shut_nvml(); print("after shut", gpu_descriptors())
