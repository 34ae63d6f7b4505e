import torch
import torch.nn as nn
import tilelang
import tilelang.language as T


def build_matmul_relu(M, N, K, block_M=128, block_N=128, block_K=32):
    @tilelang.jit(out_idx=-1)
    @T.prim_func
    def matmul_relu(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float32")
            B_s = T.alloc_shared((block_K, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, acc)
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] = T.max(acc[i, j] * 1.0 + 0.0, 0.0)
            T.copy(acc, C[by * block_M, bx * block_N])

    return matmul_relu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._kernels = {}  # one compiled kernel per problem shape: a plan cache, not an output cache

    def _kernel(self, M, N, K):
        key = (M, N, K)
        if key not in self._kernels:
            self._kernels[key] = build_matmul_relu(M, N, K)
        return self._kernels[key]

    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        kernel = self._kernel(M, N, K)
        return kernel(a.contiguous(), b.contiguous())
