# style: 5 — cupy.RawModule compiled on the first call (NVRTC), on torch tensors through DLPack,
# launched on torch's current stream
# smooth_l1_loss(p, t) (beta = 1, mean): z = |p - t|, z < beta ? 0.5 z^2 / beta : z - 0.5 beta.
# Per-block partial sums (double), then one block adds them in a fixed order (deterministic).
import cupy
import numpy as np
import torch
import torch.nn as nn

_SRC = r"""
__device__ double lz_block_sum(double v) {
    __shared__ double warp_part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_part[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

extern "C" __global__ void lz_l1_96_huber_partial(const float* __restrict__ p, const float* __restrict__ t,
                                                  double* __restrict__ partial, long long n, float beta) {
    double acc = 0.0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float z = fabsf(p[i] - t[i]);
        acc += (double)(z < beta ? 0.5f * z * z / beta : z - 0.5f * beta);
    }
    acc = lz_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

extern "C" __global__ void lz_l1_96_mean_finish(const double* __restrict__ partial, int nparts,
                                                float* __restrict__ out, double count) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partial[i];
    acc = lz_block_sum(acc);
    if (threadIdx.x == 0) out[0] = (float)(acc / count);
}
"""

_kernels = {}


def _kernels_for(device_index):
    ks = _kernels.get(device_index)
    if ks is None:
        with cupy.cuda.Device(device_index):
            mod = cupy.RawModule(code=_SRC, options=("--std=c++14",))
            ks = (mod.get_function("lz_l1_96_huber_partial"), mod.get_function("lz_l1_96_mean_finish"))
        _kernels[device_index] = ks
    return ks


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        if predictions.shape != targets.shape:
            predictions, targets = torch.broadcast_tensors(predictions, targets)
        p = predictions.detach().contiguous()
        t = targets.detach().contiguous()
        n = p.numel()
        out = torch.empty((), dtype=torch.float32, device=p.device)
        dev = p.device.index if p.device.index is not None else torch.cuda.current_device()
        partial_k, finish_k = _kernels_for(dev)
        threads = 256
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        blocks = max(1, min((n + threads - 1) // threads, sms * 8))
        partial = torch.empty(blocks, dtype=torch.float64, device=p.device)
        with cupy.cuda.Device(dev):
            with cupy.cuda.ExternalStream(torch.cuda.current_stream(dev).cuda_stream):
                partial_cp = cupy.from_dlpack(partial)
                partial_k((blocks,), (threads,), (cupy.from_dlpack(p), cupy.from_dlpack(t), partial_cp,
                                                  np.int64(n), np.float32(1.0)))
                finish_k((1,), (1024,), (partial_cp, np.int32(blocks), cupy.from_dlpack(out), np.float64(n)))
        return out
