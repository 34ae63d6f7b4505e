"""The judge's tools for correctness and baselines (judge-side only: nothing here touches
candidate code): the comparison with dtype-aware tolerances, other input distributions, fresh
weights, and the reference's eager and torch.compile timing (stitch_mcp.judge runs the stage).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp import timing as timing_mod

HALF = ("float16", "bfloat16")
CHUNK = 1 << 26


class StageError(Exception):
    def __init__(self, kind: str, message: str, **extra):
        super().__init__(message)
        self.kind, self.message, self.extra = kind, message, extra


def tolerances(dtype_name: str, spec: dict[str, Any]) -> tuple[float, float]:
    if spec.get("atol") is not None or spec.get("rtol") is not None:
        base = (spec["tol"]["atol_half"], spec["tol"]["rtol_half"]) if dtype_name in HALF else \
            (spec["tol"]["atol"], spec["tol"]["rtol"])
        return (spec["atol"] if spec.get("atol") is not None else base[0],
                spec["rtol"] if spec.get("rtol") is not None else base[1])
    if dtype_name in HALF:
        return spec["tol"]["atol_half"], spec["tol"]["rtol_half"]
    if dtype_name.startswith(("int", "uint", "bool")):
        return 0.0, 0.0
    return spec["tol"]["atol"], spec["tol"]["rtol"]


# ------------------------------------------------------------------ comparison


def compare(out: Any, ref: Any, atol: float, rtol: float) -> dict[str, Any]:
    """Candidate output vs reference output -> the fields of a TrialResult."""
    import torch

    outs, refs = integ.flatten(out), integ.flatten(ref)
    res: dict[str, Any] = {"ok": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "mismatch_fraction": 0.0,
                           "first_mismatch_index": None, "nan_count": 0, "inf_count": 0, "problems": []}
    if len(outs) != len(refs):
        res["ok"] = False
        res["problems"].append(f"returned {len(outs)} output(s); the reference returns {len(refs)}")
        return res
    total = bad_total = 0
    for k, (o, r) in enumerate(zip(outs, refs)):
        tag = f"output {k}: " if len(outs) > 1 else ""
        if not isinstance(r, torch.Tensor):
            if isinstance(o, torch.Tensor) or not _close_scalar(o, r, atol, rtol):
                res["ok"] = False
                res["problems"].append(f"{tag}value {o!r} != reference {r!r}")
            continue
        if not isinstance(o, torch.Tensor):
            res["ok"] = False
            res["problems"].append(f"{tag}is {type(o).__name__}, the reference returns a Tensor")
            continue
        if tuple(o.shape) != tuple(r.shape):
            res["ok"] = False
            res["problems"].append(f"{tag}shape {tuple(o.shape)} != reference {tuple(r.shape)}")
            continue
        if o.dtype != r.dtype:
            res["ok"] = False
            res["problems"].append(f"{tag}dtype {o.dtype} != reference {r.dtype}")
            continue
        if o.device != r.device:
            res["ok"] = False
            res["problems"].append(f"{tag}device {o.device} != reference {r.device}")
            continue
        if o.numel() > 1 and r.is_contiguous() and not o.is_contiguous():
            res["problems"].append(f"{tag}note: stride {o.stride()} is not contiguous (the reference's is "
                                   f"{r.stride()}); later ops may copy it")
        if not o.numel():
            continue
        if o.is_floating_point() or o.is_complex():
            of, rf = (torch.view_as_real(o), torch.view_as_real(r)) if o.is_complex() else (o, r)
            of, rf = of.reshape(-1), rf.reshape(-1)
            nbad, first = 0, None
            for s0 in range(0, of.numel(), CHUNK):  # chunks: multi-GB outputs need no multi-GB temporaries
                oc, rc = of[s0:s0 + CHUNK], rf[s0:s0 + CHUNK]
                if oc.dtype != torch.float64:
                    oc, rc = oc.float(), rc.float()
                if torch.equal(oc, rc):  # the common case, one pass: equal values (NaN never equals NaN)
                    res["inf_count"] += integ.count_true(torch.isinf(oc))
                    continue
                o_nan, r_nan = torch.isnan(oc), torch.isnan(rc)
                res["nan_count"] += integ.count_true(o_nan)
                res["inf_count"] += integ.count_true(torch.isinf(oc))
                same = (oc == rc) | (o_nan & r_nan)
                diff = torch.nan_to_num((oc - rc).abs().masked_fill_(same, 0.0), nan=math.inf)
                ref_abs = rc.abs()
                bad_c = (diff > ref_abs * rtol + atol) & ~same
                res["max_abs_err"] = max(res["max_abs_err"], float(diff.max()))
                rel = diff.div_(ref_abs.clamp_min_(1e-12)).nan_to_num_(nan=math.inf)
                res["max_rel_err"] = max(res["max_rel_err"], float(rel.max()))
                nb = integ.count_true(bad_c)
                if nb and first is None:
                    first = s0 + int(bad_c.nonzero()[0].item())
                nbad += nb
                del oc, rc, o_nan, r_nan, same, diff, bad_c, rel, ref_abs
            total += o.numel() if not o.is_complex() else 2 * o.numel()
            bad_total += nbad
            if nbad and res["first_mismatch_index"] is None:
                shape = tuple(o.shape) + ((2,) if o.is_complex() else ())
                res["first_mismatch_index"] = ([k] if len(outs) > 1 else []) + _unravel(first, shape)
                res["problems"].append(f"{tag}{nbad} of {o.numel()} elements differ beyond atol={atol:g}, "
                                       f"rtol={rtol:g}")
            continue
        else:
            bad = o != r
            res["max_abs_err"] = max(res["max_abs_err"], float((o.long() - r.long()).abs().max()) if o.dtype != torch.bool
                                     else float(bad.any()))
        nbad = int(bad.sum())
        total += bad.numel()
        bad_total += nbad
        if nbad and res["first_mismatch_index"] is None:
            flat = int(bad.flatten().nonzero()[0].item())
            res["first_mismatch_index"] = ([k] if len(outs) > 1 else []) + _unravel(flat, tuple(bad.shape))
            res["problems"].append(f"{tag}{nbad} of {bad.numel()} elements differ beyond atol={atol:g}, rtol={rtol:g}")
    if total:
        res["mismatch_fraction"] = bad_total / total
    if bad_total:
        res["ok"] = False
    for key in ("max_abs_err", "max_rel_err"):
        if res[key] is not None and not math.isfinite(res[key]):
            res[key] = 1e300
    return res


def _close_scalar(o, r, atol, rtol) -> bool:
    try:
        return abs(float(o) - float(r)) <= atol + rtol * abs(float(r))
    except (TypeError, ValueError):
        return o == r


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return list(reversed(idx))


# ------------------------------------------------------------------ inputs and weights


def distribute(inputs: list[Any], kind: str, seed: int, device: str) -> list[Any]:
    """Replace floating-point inputs by another distribution with the task's mean/scale and sign."""
    import torch

    if kind == "task":
        return inputs
    gen = torch.Generator(device=device).manual_seed(seed)

    def one(x):
        if isinstance(x, (list, tuple)):
            return type(x)(one(v) for v in x)
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 2:
            return x
        xf = x.float()
        mean, std = float(xf.mean()), float(xf.std())
        nonneg = float(xf.min()) >= 0
        std = std if std > 0 and math.isfinite(std) else 1.0
        z = torch.randn(x.shape, generator=gen, device=device, dtype=torch.float32)
        if kind == "heavy_tailed":  # Student t, 3 degrees of freedom (finite variance 3)
            chi = sum(torch.randn(x.shape, generator=gen, device=device, dtype=torch.float32) ** 2 for _ in range(3))
            z = z / torch.sqrt(chi / 3).clamp_min(1e-3) / math.sqrt(3)
        y = z * std + mean
        if nonneg:
            y = (z * std).abs() + max(float(xf.min()), 0.0)
        return y.to(x.dtype)

    return [one(v) for v in inputs]


def perturb_weights(ref_model, seed: int) -> None:
    """Fresh random weights in the reference (reset_parameters where a module has it, plus noise
    of half each parameter's spread); the judge shares them with the candidate's room."""
    import torch

    torch.manual_seed(seed)
    with torch.no_grad():
        for m in ref_model.modules():
            if hasattr(m, "reset_parameters") and m is not ref_model:
                try:
                    m.reset_parameters()
                except Exception:
                    pass
        for name, p in ref_model.named_parameters():
            if p.is_floating_point() and p.numel() > 1:
                std = float(p.float().std())
                p.add_(torch.randn_like(p) * (std if std > 0 else 0.1) * 0.5)


def near_zero_exploit(out, ref, atol) -> bool:
    import torch

    o, r = integ.flatten(out), integ.flatten(ref)
    if not o or not isinstance(o[0], torch.Tensor) or not isinstance(r[0], torch.Tensor):
        return False
    o, r = o[0], r[0]
    if o.shape != r.shape or not r.is_floating_point() or not r.numel():
        return False
    low, high = (float(v) for v in torch.aminmax(r))  # one pass; the exact scale only when it is small
    if max(abs(low), abs(high)) > atol and math.isfinite(low) and math.isfinite(high):
        return False
    rf = torch.nan_to_num(r.float())
    scale = float(rf.abs().max())
    if scale == 0.0 or scale > atol:
        return False
    err = float(torch.nan_to_num((o.float() - rf).abs(), nan=math.inf).max())
    return err > 0.1 * scale


class TimingInputs:
    """The inputs of timed calls: one buffer whose contents are replaced before every call from a
    pool of input sets made with the timing seeds, so caching by pointer or shape fails."""

    def __init__(self, ref_mod, device: str, seeds: list[int]):
        import torch

        from stitch_mcp.loader import make_inputs

        if device == "cuda":
            torch.cuda.empty_cache()
        self.pool = [make_inputs(ref_mod, device, s) for s in seeds]
        if device == "cuda":
            torch.cuda.synchronize()
        self.buf = integ.clone_inputs(self.pool[0])
        self._flat_buf = integ.flatten(self.buf)
        self._flat_pool = [integ.flatten(p) for p in self.pool]
        self.current = 0

    def setup(self, i: int) -> None:
        import torch

        self.current = i % len(self.pool)
        for dst, src in zip(self._flat_buf, self._flat_pool[self.current]):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)


def bench_options(spec, device: str, inputs: TimingInputs) -> dict[str, Any]:
    n_iter = int(spec.get("timing_iters") or 100)
    return {"device": device, "setup": inputs.setup, "max_calls": n_iter, "min_calls": min(10, n_iter)}


def measure_baselines(ref_model, inputs: TimingInputs, kw: dict[str, Any], compare_compile: bool,
                      stage, keep_compiled: dict | None = None) -> dict[str, Any]:
    """The reference timed in eager mode and (when asked) under torch.compile, the same way as the
    candidate. `keep_compiled`: an earlier torch.compile measurement to reuse instead."""
    import torch

    buf = inputs.buf
    stage("timing", what="eager")

    def run_ref(i: int) -> None:
        ref_model(*buf)

    with torch.no_grad():
        eager = timing_mod.bench(run_ref, **kw)
    eager.pop("method", None)
    out: dict[str, Any] = {"eager": eager, "compiled": None, "compile_note": ""}
    if compare_compile and keep_compiled and keep_compiled.get("compiled"):
        out["compiled"] = keep_compiled["compiled"]
        out["compile_note"] = keep_compiled.get("compile_note", "")
    elif compare_compile:
        stage("timing", what="torch.compile")
        t0 = time.monotonic()
        try:
            compiled_model = torch.compile(ref_model)
            with torch.no_grad():
                compiled_model(*buf)
                if kw["device"] == "cuda":
                    torch.cuda.synchronize()
                t_compile = time.monotonic() - t0

                def run_c(i: int) -> None:
                    compiled_model(*buf)

                comp = timing_mod.bench(run_c, **kw)
            comp.pop("method", None)
            out["compiled"] = comp
            out["compile_note"] = f"torch.compile (default mode); compiling took {t_compile:.1f} s"
        except Exception as exc:
            out["compile_note"] = f"torch.compile failed: {type(exc).__name__}: {str(exc)[:300]}"
    return out


def baseline_stage(spec: dict[str, Any]) -> dict[str, Any]:
    """Only the reference's baselines (a worker stage of its own): check.py measures them on the
    GPU while a task's first candidate builds on the CPU, so the run stage finds them cached."""
    from stitch_mcp.worker import stage

    stage("import")
    import torch

    from stitch_mcp.loader import build_model, import_program, init_inputs

    torch.backends.cuda.matmul.allow_tf32 = False  # as in the run stage
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ref_mod = import_program(spec["reference_source"], "reference", Path.cwd())
    stage("inputs")
    init_args = init_inputs(ref_mod)
    ref_model = build_model(ref_mod.Model, init_args, device)  # training mode, as in the run stage
    inputs = TimingInputs(ref_mod, device, spec["timing_seeds"])
    stage("timing")
    base = measure_baselines(ref_model, inputs, bench_options(spec, device, inputs),
                             bool(spec.get("compare_compile")), stage)
    return {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
            "timing": {**base, "baselines_cached": False}}
