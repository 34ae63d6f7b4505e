# style: 4 — Triton (@triton.jit kernels, JIT-compiled on their first launch)
# mean((p - t)^2): a persistent grid (a few programs per SM) each sums its tiles into per-lane
# fp32 accumulators and writes one partial; a one-program kernel adds the partials in order and
# divides by the element count (deterministic, no atomics).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lz_l1_94_sqdiff_partial(p_ptr, t_ptr, part_ptr, n, n_tiles, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    first = pid.to(tl.int64)  # 64-bit tile index, so tile * BLOCK cannot overflow
    step = tl.num_programs(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for tile in range(first, n_tiles, step):
        offs = tile * BLOCK + lanes
        mask = offs < n
        p = tl.load(p_ptr + offs, mask=mask, other=0.0)
        t = tl.load(t_ptr + offs, mask=mask, other=0.0)
        d = p - t
        acc += d * d
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _lz_l1_94_mean_finish(part_ptr, out_ptr, n_parts, n_elems, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        idx = start + lanes
        acc += tl.load(part_ptr + idx, mask=idx < n_parts, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_elems)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        if predictions.shape != targets.shape:
            predictions, targets = torch.broadcast_tensors(predictions, targets)
        p = predictions.contiguous()
        t = targets.contiguous()
        n = p.numel()
        out = torch.empty((), dtype=torch.float32, device=p.device)
        BLOCK = 1024
        n_tiles = triton.cdiv(n, BLOCK)
        sms = torch.cuda.get_device_properties(p.device).multi_processor_count if p.is_cuda else 4
        n_parts = max(1, min(n_tiles, sms * 4))
        partial = torch.empty(n_parts, dtype=torch.float32, device=p.device)
        _lz_l1_94_sqdiff_partial[(n_parts,)](p, t, partial, n, n_tiles, BLOCK=BLOCK, num_warps=8)
        _lz_l1_94_mean_finish[(1,)](partial, out, n_parts, float(n), BLOCK=1024, num_warps=4)
        return out
