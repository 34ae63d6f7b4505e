"""Tensor-level tools of the integrity checks: flattening and cloning outputs, bit-exact
comparison, the poison that shows elements never written, fingerprints.

The judge (stitch_mcp.judge) uses them on its own copies; the candidate's room only poisons its
free memory with them. Findings are plain dicts (code, message, severity, confidence); the server
turns them into `Finding` models. Every error-severity finding fails the verdict.
"""

from __future__ import annotations

from typing import Any

# Poison values: NaNs with a payload that arithmetic never produces (it yields the canonical NaN),
# so an element still holding it after the call was never written by the candidate.
POISON_BITS = {"float32": (0x7FC0DEAD, "int32"), "float64": (0x7FF8DEADDEADDEAD, "int64"),
               "float16": (0x7E5A, "int16"), "bfloat16": (0x7FDA, "int16")}
INT_POISON = -0x5A5A5A5A


def storages(values: Any) -> set[int]:
    """Where the tensors among `values` (nested as outputs and inputs are) keep their elements."""
    import torch

    return {v.untyped_storage().data_ptr() for v in flatten(values) if isinstance(v, torch.Tensor) and v.numel()}


def finding(code: str, message: str, severity: str = "error", confidence: str = "certain", **extra) -> dict:
    return {"code": code, "message": message, "severity": severity, "confidence": confidence, **extra}


# ------------------------------------------------------------------ tensors


def flatten(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(flatten(v))
        return out
    if isinstance(value, dict):
        out = []
        for k in sorted(value):
            out.extend(flatten(value[k]))
        return out
    return [value]


def clone_inputs(inputs: list[Any]) -> list[Any]:
    import torch

    def c(v):
        if isinstance(v, torch.Tensor):
            return v.clone()
        if isinstance(v, (list, tuple)):
            return type(v)(c(x) for x in v)
        return v

    return [c(v) for v in inputs]


def _bits(t):
    """The tensor's elements as integers of the same width (NaN payloads and -0.0 included)."""
    import torch

    if t.is_complex():
        t = torch.view_as_real(t)
    if t.is_floating_point():
        return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def same_bits(a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(_bits(a), _bits(b)))


def count_true(mask) -> int:
    """How many elements of a bool tensor are set; one pass when none is (summing a bool tensor
    first copies it to int64)."""
    return int(mask.sum()) if bool(mask.any()) else 0


def poison_free_memory(templates: list[Any], device: str) -> None:
    """Fill the allocator's free blocks of the outputs' sizes with the poison value, then free them.

    The next allocation of the same size (the candidate's output) then starts out poisoned, and
    whatever a previous call left there (e.g. the reference's result) is gone.
    """
    import torch

    held = []
    for t in templates:
        if not isinstance(t, torch.Tensor) or not t.numel():
            continue
        # the CUDA caching allocator hands back the block just freed; glibc malloc may pick either
        for _ in range(1 if device.startswith("cuda") else 2):
            held.append(poisoned_like(t, device))
    del held
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def poisoned_like(t, device: str):
    import torch

    name = str(t.dtype).replace("torch.", "")
    if name in POISON_BITS:
        bits, itype = POISON_BITS[name]
        if bits >= 2 ** 31 and itype == "int32":
            bits -= 2 ** 32
        if itype == "int64" and bits >= 2 ** 63:
            bits -= 2 ** 64
        if itype == "int16" and bits >= 2 ** 15:
            bits -= 2 ** 16
        raw = torch.full(t.shape, bits, dtype=getattr(torch, itype), device=device)
        return raw.view(t.dtype)
    if t.dtype == torch.bool:
        return torch.ones(t.shape, dtype=t.dtype, device=device)
    if t.is_complex():
        return torch.full(t.shape, float("nan"), dtype=t.dtype, device=device)
    return torch.full(t.shape, INT_POISON if t.dtype in (torch.int32, torch.int64) else 7, dtype=t.dtype,
                      device=device)


def unwritten_count(o) -> int:
    """Elements still holding the float poison payload."""
    import torch

    name = str(o.dtype).replace("torch.", "")
    if name not in POISON_BITS or not o.numel() or o.layout != torch.strided:
        return 0
    bits, itype = POISON_BITS[name]
    if itype == "int32" and bits >= 2 ** 31:
        bits -= 2 ** 32
    if itype == "int64" and bits >= 2 ** 63:
        bits -= 2 ** 64
    if itype == "int16" and bits >= 2 ** 15:
        bits -= 2 ** 16
    try:
        return count_true(o.view(getattr(torch, itype)) == bits)
    except Exception:
        return 0


def fingerprint(o) -> tuple | None:
    """A cheap summary of a tensor for 'does it change with the input' checks."""
    import torch

    if not isinstance(o, torch.Tensor) or not o.numel():
        return None
    f = o.detach().flatten()
    if f.is_complex():
        f = torch.view_as_real(f).flatten()
    n = f.numel()
    steps = min(n, 4096)
    # integer arithmetic: a float32 linspace rounds n - 1 up to n past 2**24 elements (out of bounds)
    idx = torch.arange(steps, device=f.device, dtype=torch.int64) * (n - 1) // max(steps - 1, 1)
    sample = torch.nan_to_num(f[idx].to(torch.float64), nan=1.2345e300)
    # in the tensor's own precision: a float64 sum would first copy all of it to float64
    total = float(torch.nansum(f)) if f.is_floating_point() else float(f.sum())
    return (n, total, tuple(sample.cpu().tolist()))


def tensor_bytes(values: list[Any]) -> int:
    import torch

    total = 0
    for t in flatten(values):
        if isinstance(t, torch.Tensor):
            total += t.numel() * t.element_size()
    return total
