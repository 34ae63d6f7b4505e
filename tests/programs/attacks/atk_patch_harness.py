"""Attack: patch the harness's Python objects at import, then return a wrong output.

Replaces the comparison functions' __code__, torch.allclose/isclose/equal, torch.testing.assert_close,
torch.Tensor methods and dunders (through setattr(getattr(torch, "Tensor"), ...)), and the clocks.
In a process that also compares or times, any of these would make a wrong output pass.
"""
import importlib
import time

import torch
import torch.nn as nn


def _always_ok(*args, **kwargs):
    return {"ok": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "mismatch_fraction": 0.0,
            "first_mismatch_index": None, "nan_count": 0, "inf_count": 0, "problems": []}


def _true(*args, **kwargs):
    return True


def _zero_like(self, *args, **kwargs):
    return torch.zeros((), dtype=torch.float32)


for mod_name, fn_name in (("stitch_mcp.correctness", "compare"), ("stitch_mcp.compare", "compare"),
                          ("stitch_mcp.integrity", "same_bits"), ("stitch_mcp.judge.trials", "_compare")):
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name)
        fn.__code__ = (_always_ok if fn_name != "same_bits" else _true).__code__
    except Exception:
        pass

T = getattr(torch, "Tensor")
for name in ("__sub__", "__rsub__", "sub", "abs", "__abs__"):
    setattr(T, name, _zero_like)
for name in ("__eq__", "allclose", "equal", "isclose"):
    setattr(T, name, _true)
torch.allclose = _true
torch.equal = _true
torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
time.perf_counter = lambda: 0.0
time.monotonic = lambda: 0.0


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0  # wrong for relu
