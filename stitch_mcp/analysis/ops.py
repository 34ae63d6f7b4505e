"""The operator vocabulary: which torch functions, tensor methods and ATen ops compute and which
are glue, one canonical name per computation, and each op's class and static weight."""

from __future__ import annotations

# Canonical names: several spellings of one computation map to one name, so that the reference's
# torch.matmul, a profile's aten::addmm and a candidate's F.linear line up.
ALIASES = {
    "mm": "matmul", "bmm": "matmul", "addmm": "matmul", "addbmm": "matmul", "baddbmm": "matmul",
    "linear": "matmul", "einsum": "matmul", "matmul": "matmul", "addmv": "matmul", "mv": "matmul",
    "dot": "matmul", "tensordot": "matmul", "inner": "matmul", "outer": "matmul", "bilinear": "matmul",
    "conv1d": "conv", "conv2d": "conv", "conv3d": "conv", "convolution": "conv", "cudnn_convolution": "conv",
    "conv_depthwise2d": "conv", "slow_conv2d": "conv",
    "conv_transpose1d": "conv_transpose", "conv_transpose2d": "conv_transpose",
    "conv_transpose3d": "conv_transpose", "cudnn_convolution_transpose": "conv_transpose",
    "native_layer_norm": "layer_norm", "native_batch_norm": "batch_norm", "cudnn_batch_norm": "batch_norm",
    "batch_norm_elemt": "batch_norm", "native_group_norm": "group_norm", "log_softmax": "log_softmax",
    "max_pool1d": "max_pool", "max_pool2d": "max_pool", "max_pool3d": "max_pool",
    "max_pool2d_with_indices": "max_pool", "max_pool3d_with_indices": "max_pool",
    "avg_pool1d": "avg_pool", "avg_pool2d": "avg_pool", "avg_pool3d": "avg_pool",
    "adaptive_avg_pool1d": "adaptive_avg_pool", "adaptive_avg_pool2d": "adaptive_avg_pool",
    "adaptive_avg_pool3d": "adaptive_avg_pool", "adaptive_max_pool2d": "adaptive_max_pool",
    "scaled_dot_product_attention": "attention", "scaled_dot_product_flash_attention": "attention",
    "scaled_dot_product_efficient_attention": "attention", "multi_head_attention_forward": "attention",
    "clamp_min": "clamp", "clamp_max": "clamp", "clip": "clamp", "hardtanh": "hardtanh",
    "multiply": "mul", "true_divide": "div", "divide": "div", "subtract": "sub", "rsub": "sub",
    "maximum": "max", "minimum": "min", "amax": "max", "amin": "min", "frobenius_norm": "norm",
    "linalg_vector_norm": "norm", "vector_norm": "norm", "matrix_norm": "norm",
    "cross_entropy": "cross_entropy", "nll_loss": "cross_entropy", "nll_loss_nd": "cross_entropy",
}

# Torch functions / tensor methods / ATen ops that do real computation.
COMPUTE = {
    "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "einsum", "addmv", "mv", "dot",
    "tensordot", "inner", "outer", "bilinear", "conv1d", "conv2d", "conv3d", "convolution",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "relu", "relu6", "gelu", "silu", "mish",
    "sigmoid", "tanh", "softplus", "softsign", "elu", "selu", "celu", "leaky_relu", "hardtanh",
    "hardsigmoid", "hardswish", "logsigmoid", "prelu", "rrelu", "threshold", "softmax", "log_softmax",
    "softmin", "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
    "normalize", "sum", "mean", "prod", "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "cumsum",
    "cumprod", "argmax", "argmin", "amax", "amin", "max", "min", "maximum", "minimum", "topk", "sort",
    "argsort", "median", "mode", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt",
    "rsqrt", "abs", "neg", "reciprocal", "sin", "cos", "tan", "erf", "erfc", "sign", "floor", "ceil",
    "round", "trunc", "frac", "clamp", "clamp_min", "clamp_max", "clip", "where", "add", "sub", "mul",
    "div", "true_divide", "multiply", "divide", "subtract", "fmod", "remainder", "addcmul", "addcdiv",
    "lerp", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "dropout", "embedding", "scaled_dot_product_attention",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "hinge_embedding_loss",
    "cosine_similarity", "cosine_embedding_loss", "triplet_margin_loss", "margin_ranking_loss",
    "pairwise_distance", "cdist", "tril", "triu", "diag", "diag_embed", "trace", "flip", "roll",
    "cumulative_trapezoid", "interpolate", "upsample", "grid_sample", "pixel_shuffle", "fft", "rfft",
    "square", "any", "all", "gather", "scatter", "scatter_add", "index_select", "masked_fill",
    "lstm", "gru", "rnn_tanh", "rnn_relu", "matrix_exp", "inverse", "cholesky", "svd", "qr", "solve",
    "eq", "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_not", "bitwise_and",
}
COMPUTE |= {n + "_" for n in ("relu", "sigmoid", "tanh", "add", "sub", "mul", "div", "clamp", "exp",
                               "log", "pow", "sqrt", "neg", "abs", "addmm", "baddbmm", "gelu", "silu",
                               "leaky_relu", "hardtanh", "elu", "masked_fill", "scatter", "scatter_add")}

# Glue: shapes, allocation, views, device/dtype moves, copies.
GLUE = {
    "view", "reshape", "contiguous", "empty", "empty_like", "empty_strided", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_empty", "new_zeros", "new_ones", "new_full",
    "new_tensor", "size", "numel", "dim", "ndimension", "stride", "to", "cuda", "cpu", "type", "data_ptr",
    "is_contiguous", "permute", "transpose", "t", "flatten", "unflatten", "squeeze", "unsqueeze",
    "expand", "expand_as", "view_as", "reshape_as", "narrow", "select", "chunk", "split", "unbind",
    "clone", "copy_", "detach", "requires_grad_", "item", "tolist", "cat", "concat", "stack", "pad",
    "arange", "tensor", "as_tensor", "as_strided", "element_size", "get_device", "current_stream",
    "synchronize", "manual_seed", "no_grad", "inference_mode", "is_floating_point", "fill_", "zero_",
    "float", "double", "int", "long", "bool", "short", "char", "byte", "movedim", "moveaxis", "split_with_sizes",
    "broadcast_to", "from_numpy", "is_tensor", "set_grad_enabled", "device", "Size", "repeat", "tile",
    "repeat_interleave", "randn", "rand", "randint", "normal_", "uniform_", "numpy", "storage_offset",
    "half", "bfloat16", "current_device", "get_device_properties", "is_available", "empty_cache",
}
PRECISION_CASTS = {"half", "bfloat16"}

NN_MODULES = {
    "Linear": "matmul", "Bilinear": "matmul", "Conv1d": "conv", "Conv2d": "conv", "Conv3d": "conv",
    "ConvTranspose1d": "conv_transpose", "ConvTranspose2d": "conv_transpose",
    "ConvTranspose3d": "conv_transpose", "ReLU": "relu", "ReLU6": "relu6", "GELU": "gelu", "SiLU": "silu",
    "Mish": "mish", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus", "Softsign": "softsign",
    "ELU": "elu", "SELU": "selu", "CELU": "celu", "LeakyReLU": "leaky_relu", "Hardtanh": "hardtanh",
    "Hardsigmoid": "hardsigmoid", "Hardswish": "hardswish", "PReLU": "prelu", "Softmax": "softmax",
    "LogSoftmax": "log_softmax", "LayerNorm": "layer_norm", "BatchNorm1d": "batch_norm",
    "BatchNorm2d": "batch_norm", "BatchNorm3d": "batch_norm", "GroupNorm": "group_norm",
    "InstanceNorm1d": "instance_norm", "InstanceNorm2d": "instance_norm", "InstanceNorm3d": "instance_norm",
    "RMSNorm": "rms_norm", "MaxPool1d": "max_pool", "MaxPool2d": "max_pool", "MaxPool3d": "max_pool",
    "AvgPool1d": "avg_pool", "AvgPool2d": "avg_pool", "AvgPool3d": "avg_pool",
    "AdaptiveAvgPool1d": "adaptive_avg_pool", "AdaptiveAvgPool2d": "adaptive_avg_pool",
    "AdaptiveAvgPool3d": "adaptive_avg_pool", "AdaptiveMaxPool2d": "adaptive_max_pool", "Dropout": "dropout",
    "Embedding": "embedding", "LSTM": "rnn", "GRU": "rnn", "RNN": "rnn", "MultiheadAttention": "attention",
    "TransformerEncoderLayer": "attention", "CrossEntropyLoss": "cross_entropy", "MSELoss": "mse_loss",
    "Upsample": "interpolate", "PixelShuffle": "pixel_shuffle",
}

HEAVY = {"matmul", "conv", "conv_transpose", "attention", "rnn"}
REDUCTION = {"softmax", "log_softmax", "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm",
             "sum", "mean", "prod", "var", "std", "norm", "logsumexp", "cumsum", "cumprod", "argmax", "argmin",
             "max", "min", "max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "cross_entropy",
             "mse_loss", "l1_loss", "kl_div", "topk", "sort", "median", "normalize", "cosine_similarity",
             "hinge_embedding_loss", "triplet_margin_loss", "smooth_l1_loss", "huber_loss", "cdist"}


def canonical_op(name: str) -> str:
    """'aten::addmm' -> 'matmul', 'torch.nn.functional.relu' -> 'relu', 'relu_' -> 'relu'."""
    n = name.strip().split("(")[0]
    for sep in ("::", "."):
        n = n.rsplit(sep, 1)[-1]
    n = n.strip("_").lower()
    if n.endswith("_") or (n[:-1] in COMPUTE and n.endswith("_")):
        n = n.rstrip("_")
    n = n.removesuffix("_out").removesuffix("_forward")
    return ALIASES.get(n, n)


def op_class(canonical: str) -> str:
    """'gemm', 'reduction' or 'elementwise'."""
    if canonical in HEAVY:
        return "gemm"
    if canonical in REDUCTION:
        return "reduction"
    return "elementwise"


def op_weight(canonical: str) -> float:
    """A static guess of an op's relative GPU time when no profile is available."""
    return {"gemm": 10.0, "reduction": 3.0, "elementwise": 1.0}[op_class(canonical)]

