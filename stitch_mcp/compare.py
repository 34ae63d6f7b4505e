"""The judge's comparison: a candidate's outputs against the reference's, as pure functions of
tensors (nothing here runs either program, except `reference_noise`, which runs the reference).

- `tolerance_table` / `tolerances`: the presets (strict, kernelbench) and what each dtype gets;
- `compare`: every element, chunked so multi-GB outputs need no multi-GB temporaries; it reports
  the worst element by *tolerance ratio* (error / (atol + rtol*|ref|)), which means the same near
  zero as far from it, and a relative error whose |ref| is floored at the output's mean |ref| (an
  error of 1e-5 where the reference is 1e-12 is not a relative error of 1e7);
- `reference_noise`: the reference run again in float64 on the same inputs, so a failed trial can
  say whether its error is the size of the reference's own rounding or many times it;
- `describe_inputs`: what a trial's inputs really were.
Called by the run stage (stitch_mcp.correctness) in the judge process.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp.models import NoiseReport

HALF = ("float16", "bfloat16")
CHUNK = 1 << 26
BIG = 1e300  # stands for inf/NaN in the report's error figures (JSON has no inf)

# float32 (and float64) values, then float16/bfloat16. KernelBench's published results use
# atol=rtol=1e-2 (its run_and_check_correctness); strict is ours, 100x tighter for float32.
PRESETS: dict[str, dict[str, float]] = {
    "strict": {"atol": 1e-4, "rtol": 1e-4, "atol_half": 1e-2, "rtol_half": 1e-2},
    "kernelbench": {"atol": 1e-2, "rtol": 1e-2, "atol_half": 1e-2, "rtol_half": 1e-2},
}
WITHIN_NOISE = 2.0  # a candidate at most this many times farther from float64 than the reference is


# ------------------------------------------------------------------ tolerances


def tolerance_table(preset: str, overrides: dict[str, float | None] | None = None) -> dict[str, Any]:
    """The run spec's `tol`: a preset's four values, each replaced where `overrides` (the settings
    atol, rtol, atol_half, rtol_half) gives one; `preset` says where they came from."""
    if preset not in PRESETS:
        raise ValueError(f"unknown tolerance preset {preset!r}; use one of {', '.join(PRESETS)}")
    table: dict[str, Any] = dict(PRESETS[preset])
    changed = []
    for key, value in (overrides or {}).items():
        if key in table and value is not None and value != table[key]:
            table[key] = float(value)
            changed.append(key)
    table["preset"] = preset + "".join(f"+{k}" for k in changed)
    return table


def tolerances(dtype_name: str, spec: dict[str, Any]) -> tuple[float, float]:
    """(atol, rtol) for an output dtype: the call's atol/rtol where given, else the spec's table."""
    tol = spec["tol"]
    if spec.get("atol") is not None or spec.get("rtol") is not None:
        base = (tol["atol_half"], tol["rtol_half"]) if dtype_name in HALF else (tol["atol"], tol["rtol"])
        return (spec["atol"] if spec.get("atol") is not None else base[0],
                spec["rtol"] if spec.get("rtol") is not None else base[1])
    if dtype_name in HALF:
        return tol["atol_half"], tol["rtol_half"]
    if dtype_name.startswith(("int", "uint", "bool")):
        return 0.0, 0.0
    return tol["atol"], tol["rtol"]


def output_tolerances(templates: list[Any], spec: dict[str, Any]) -> list[tuple[float, float]]:
    """(atol, rtol) for each of the reference's flattened outputs, by its own dtype (Python ints and
    bools exactly, other values as float32): outputs of several dtypes are each held to their own.
    One pair for all from the first output held a float32 output to float16's 1e-2 behind a float16
    one, and an int64 argmax before a softmax held the softmax to exact equality (red team,
    2026-11-27)."""
    return [tolerances(str(o.dtype).replace("torch.", "") if hasattr(o, "dtype") else
                       "int64" if isinstance(o, (bool, int)) else "float32", spec) for o in templates]


def tolerance_by_dtype(spec: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """What each kind of output gets under the spec (for the report); integers compare exactly."""
    return {"float32/float64/complex": tolerances("float32", spec), "float16/bfloat16": tolerances("float16", spec),
            "integer/bool": (0.0, 0.0)}


def tolerance_label(spec: dict[str, Any]) -> str:
    label = spec["tol"].get("preset", "")
    given = [k for k in ("atol", "rtol") if spec.get(k) is not None]
    return label + "".join(f"+{k}" for k in given if f"+{k}" not in label)


# ------------------------------------------------------------------ comparison


def _new_result() -> dict[str, Any]:
    return {"ok": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "mismatch_fraction": 0.0,
            "first_mismatch_index": None, "nan_count": 0, "inf_count": 0, "problems": [],
            "max_tol_ratio": 0.0, "worst_index": None, "worst_reference": None, "worst_candidate": None,
            "worst_tolerance": None}


def compare(out: Any, ref: Any, atol: float, rtol: float,
            tols: list[tuple[float, float]] | None = None) -> dict[str, Any]:
    """Candidate output vs reference output -> the fields of a TrialResult. `tols`: (atol, rtol)
    for each flattened output (output_tolerances), else `atol` and `rtol` for all."""
    import torch

    outs, refs = integ.flatten(out), integ.flatten(ref)
    res = _new_result()
    if len(outs) != len(refs):
        res["ok"] = False
        res["problems"].append(f"returned {len(outs)} output(s); the reference returns {len(refs)}")
        return res
    total = bad_total = 0
    for k, (o, r) in enumerate(zip(outs, refs)):
        k_atol, k_rtol = tols[k] if tols and k < len(tols) else (atol, rtol)
        tag = f"output {k}: " if len(outs) > 1 else ""
        prefix = [k] if len(outs) > 1 else []
        if not isinstance(r, torch.Tensor):
            if isinstance(o, torch.Tensor) or not _close_scalar(o, r, k_atol, k_rtol):
                res["ok"] = False
                res["problems"].append(f"{tag}value {o!r} != reference {r!r}")
            continue
        problem = _layout_problem(o, r)
        if problem:
            res["ok"] = False
            res["problems"].append(tag + problem)
            continue
        if o.numel() > 1 and r.is_contiguous() and not o.is_contiguous():
            res["problems"].append(f"{tag}note: stride {o.stride()} is not contiguous (the reference's is "
                                   f"{r.stride()}); later ops may copy it")
        if not o.numel():
            continue
        if o.is_floating_point() or o.is_complex():
            nbad, first, n = _compare_float(o, r, k_atol, k_rtol, res, prefix)
        else:
            nbad, first, n = _compare_exact(o, r, res, prefix)
        total += n
        bad_total += nbad
        if nbad and res["first_mismatch_index"] is None:
            shape = tuple(o.shape) + ((2,) if o.is_complex() else ())
            res["first_mismatch_index"] = prefix + _unravel(first, shape)
            res["problems"].append(f"{tag}{nbad} of {n} elements differ beyond atol={k_atol:g}, rtol={k_rtol:g}")
    if total:
        res["mismatch_fraction"] = bad_total / total
    if bad_total:
        res["ok"] = False
    for key in ("max_abs_err", "max_rel_err", "max_tol_ratio"):
        if res[key] is not None and not math.isfinite(res[key]):
            res[key] = BIG
    return res


def _layout_problem(o, r) -> str:
    import torch

    if not isinstance(o, torch.Tensor):
        return f"is {type(o).__name__}, the reference returns a Tensor"
    if tuple(o.shape) != tuple(r.shape):
        return f"shape {tuple(o.shape)} != reference {tuple(r.shape)}"
    if o.dtype != r.dtype:
        return f"dtype {o.dtype} != reference {r.dtype}"
    if o.device != r.device:
        return f"device {o.device} != reference {r.device}"
    return ""


def _compare_float(o, r, atol: float, rtol: float, res: dict, prefix: list[int]) -> tuple[int, int | None, int]:
    """Floating/complex outputs (complex as pairs of reals), in chunks; updates res's figures and
    worst element. Returns (mismatches, first mismatch's flat index, elements compared)."""
    import torch

    of, rf = (torch.view_as_real(o), torch.view_as_real(r)) if o.is_complex() else (o, r)
    shape = tuple(of.shape)
    of, rf = of.reshape(-1), rf.reshape(-1)
    floor = None  # relative error: |ref| floored at the output's mean |ref| (measured when first needed)
    nbad, first = 0, None
    for s0 in range(0, of.numel(), CHUNK):
        oc, rc = of[s0:s0 + CHUNK], rf[s0:s0 + CHUNK]
        if oc.dtype != torch.float64:
            oc, rc = oc.float(), rc.float()
        if torch.equal(oc, rc):  # the common case, one pass: equal values (NaN never equals NaN)
            res["inf_count"] += _inf_count(oc)
            continue
        same = oc == rc
        diff = (oc - rc).abs_()
        if math.isnan(float(diff.max())):  # a NaN on either side, or equal infinities (inf - inf)
            o_nan = torch.isnan(oc)
            res["nan_count"] += _count(o_nan)
            same |= o_nan & torch.isnan(rc)
            diff.nan_to_num_(nan=math.inf, posinf=math.inf)
            del o_nan
        res["inf_count"] += _inf_count(oc)
        diff.masked_fill_(same, 0.0)
        del same
        ref_abs = rc.abs()
        ref_finite = math.isfinite(float(ref_abs.max()))  # NaN propagates through max
        if floor is None:
            floor = (float(ref_abs.mean()) if ref_finite and of.numel() <= CHUNK else _mean_abs(rf)) \
                or max(atol, 1e-12)
        allowed = ref_abs * rtol + atol
        if not ref_finite:  # where the reference is inf or NaN only the same value matches (same)
            allowed.masked_fill_(~torch.isfinite(rc), 0.0)
        bad_c = diff > allowed  # never where same: diff is 0 there
        res["max_abs_err"] = max(res["max_abs_err"], float(diff.max()))
        ratio = diff / allowed
        if not ref_finite or atol <= 0:  # 0/0 (exact match, zero tolerance): 0
            ratio.nan_to_num_(nan=0.0, posinf=math.inf)
        worst = int(ratio.argmax())
        if float(ratio[worst]) > res["max_tol_ratio"] or res["worst_index"] is None:
            res["max_tol_ratio"] = float(ratio[worst])
            res["worst_index"] = prefix + _unravel(s0 + worst, shape)
            res["worst_reference"], res["worst_candidate"] = float(rc[worst]), float(oc[worst])
            res["worst_tolerance"] = float(allowed[worst])
        del ratio, allowed
        rel = diff.div_(ref_abs.clamp_min_(floor))
        if not ref_finite:
            rel.nan_to_num_(nan=math.inf, posinf=math.inf)
        res["max_rel_err"] = max(res["max_rel_err"], float(rel.max()))
        nb = _count(bad_c)
        if nb and first is None:
            first = s0 + int(bad_c.nonzero()[0].item())
        nbad += nb
        del oc, rc, diff, bad_c, rel, ref_abs
    return nbad, first, of.numel()


def _mean_abs(flat) -> float:
    """Mean |value| over the finite values of a flat float tensor, chunk by chunk."""
    import torch

    total, n = 0.0, 0
    for s0 in range(0, flat.numel(), CHUNK):
        c = flat[s0:s0 + CHUNK].float().abs()
        if math.isfinite(float(c.max())):
            total, n = total + float(c.sum()), n + c.numel()
        else:
            finite = torch.isfinite(c)
            total, n = total + float(c.masked_fill_(~finite, 0.0).sum()), n + _count(finite)
    return total / n if n else 0.0


def _count(mask) -> int:
    """Set elements of a bool tensor (count_nonzero: no int64 copy of the mask)."""
    import torch

    return int(torch.count_nonzero(mask))


def _inf_count(x) -> int:
    import torch

    low, high = torch.aminmax(x)
    return 0 if math.isfinite(float(low)) and math.isfinite(float(high)) else _count(torch.isinf(x))


def _compare_exact(o, r, res: dict, prefix: list[int]) -> tuple[int, int | None, int]:
    """Integer and bool outputs: equal or not; the worst element is the largest difference."""
    import torch

    bad = o != r
    nbad = _count(bad)
    if not nbad:
        return 0, None, bad.numel()
    if o.dtype == torch.bool:
        diff = bad.reshape(-1).to(torch.uint8)
    else:
        diff = (o.long() - r.long()).abs().reshape(-1)
    worst = int(diff.argmax())
    res["max_abs_err"] = max(res["max_abs_err"], float(diff[worst]))
    if res["worst_index"] is None or res["max_tol_ratio"] < BIG:
        res["max_tol_ratio"] = math.inf  # any difference exceeds a zero tolerance
        res["worst_index"] = prefix + _unravel(worst, tuple(o.shape))
        res["worst_reference"] = float(r.reshape(-1)[worst])
        res["worst_candidate"] = float(o.reshape(-1)[worst])
        res["worst_tolerance"] = 0.0
    first = int(bad.reshape(-1).nonzero()[0].item())
    return nbad, first, bad.numel()


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


def near_zero_exploit(out, ref, atol: float | list[float], ref_model=None, inputs: list[Any] | None = None) -> bool:
    """For some tensor output, the reference's is within its atol of zero and the candidate's does
    not follow it. `atol`: one for every output, or one per flattened output (output_tolerances).
    Only the first output was looked at: a second one, within its tolerance of zero and returned as
    zeros, passed (red team, 2026-11-27). With the reference model and the inputs, not where that
    output is its rounding noise (the mean of a LayerNorm's output) and the candidate's is no farther
    from a float64 run than the reference's own (a second red-team round)."""
    o, r = integ.flatten(out), integ.flatten(ref)
    atols = atol if isinstance(atol, list) else [atol] * len(r)
    near = [k for k, (a, b, tol) in enumerate(zip(o, r, atols)) if _near_zero_one(a, b, tol)]
    if not near or ref_model is None:
        return bool(near)
    out64 = _float64_outputs(ref_model, inputs or [], r, near)  # where it cannot run, not shown to be noise
    return isinstance(out64, str) or any(_max_abs(o[k], out64[k]) > WITHIN_NOISE * _max_abs(r[k], out64[k])
                                         for k in near)


def _float64_outputs(ref_model, inputs: list[Any], refs: list[Any], floats: list[int]) -> list[Any] | str:
    """The reference run again in float64 (a deep copy of the model, floating inputs cast): its
    flattened outputs, or why it was not (no float64 on the device, not enough GPU memory, a
    reference that does not run or compute in float64, judged at the outputs numbered `floats`)."""
    import torch

    device = refs[floats[0]].device
    if device.type == "mps":
        return "float64 is not supported on this device"
    if device.type == "cuda":
        need, free = _float64_bytes(ref_model, inputs, refs), torch.cuda.mem_get_info(device)[0]
        if need > 0.7 * free:
            return f"a float64 copy needs about {need / 1e9:.1f} GB; {free / 1e9:.1f} GB is free"
    try:
        model64 = copy.deepcopy(ref_model).to(torch.float64)
        with torch.no_grad():
            out64 = integ.flatten(model64(*_to_float64(list(inputs))))
        del model64
    except Exception as exc:  # a custom op, a hard-coded dtype, a model that cannot be copied
        return f"the reference does not run in float64: {type(exc).__name__}: {str(exc)[:200]}"
    if len(out64) != len(refs) or any(not isinstance(out64[i], torch.Tensor) or out64[i].shape != refs[i].shape
                                      or out64[i].dtype not in (torch.float64, torch.complex128) for i in floats):
        return "the reference does not compute in float64 (it casts to a fixed dtype)"
    return out64


def _near_zero_one(o, r, atol: float) -> bool:
    import torch

    if not isinstance(o, torch.Tensor) or not isinstance(r, torch.Tensor):
        return False
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


# ------------------------------------------------------------------ context for failed trials


def describe_inputs(inputs: list[Any], limit: int = 6) -> list[str]:
    """One line per input as the trial really used it: dtype, shape and value statistics."""
    import torch

    lines = []
    for i, x in enumerate(integ.flatten(inputs)[:limit]):
        if not isinstance(x, torch.Tensor):
            text = repr(x)
            lines.append(f"input {i}: {text if len(text) < 40 else text[:37] + '...'}")
            continue
        head = f"input {i}: {str(x.dtype).replace('torch.', '')}{list(x.shape)}"
        if not x.numel():
            lines.append(head + " (empty)")
            continue
        v = torch.view_as_real(x) if x.is_complex() else x
        if v.is_floating_point():
            vf = v.float()
            finite = torch.isfinite(vf)
            n_bad = v.numel() - _count(finite)
            vf = vf[finite] if n_bad else vf
            if not vf.numel():
                lines.append(head + f", all {n_bad} values non-finite")
                continue
            low, high = (float(t) for t in torch.aminmax(vf))
            std = float(vf.std()) if vf.numel() > 1 else 0.0
            lines.append(head + f", mean {float(vf.mean()):.3g}, std {std:.3g}, range [{low:.3g}, {high:.3g}]"
                         + (f", {n_bad} non-finite" if n_bad else ""))
        else:
            low, high = (int(t) for t in torch.aminmax(v.long() if v.dtype == torch.bool else v))
            lines.append(head + f", range [{low}, {high}]")
    return lines


def _to_float64(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):  # always a new tensor: the reference may write its inputs
        if value.is_complex():
            return value.to(torch.complex128, copy=True)
        return value.to(torch.float64, copy=True) if value.is_floating_point() else value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_float64(v) for v in value)
    return value


def _chunks(a, b):
    """Matching flat chunks of two same-shaped tensors (complex as pairs of reals), in float64."""
    import torch

    af = (torch.view_as_real(a) if a.is_complex() else a).reshape(-1)
    bf = (torch.view_as_real(b) if b.is_complex() else b).reshape(-1)
    for s0 in range(0, af.numel(), CHUNK):
        yield af[s0:s0 + CHUNK].double(), bf[s0:s0 + CHUNK].double()


def _max_abs(a, b) -> float:
    """max |a - b| over two same-shaped tensors, in float64; NaN where only one is NaN counts as inf."""
    import torch

    worst = 0.0
    for ac, bc in _chunks(a, b):
        same = (ac == bc) | (torch.isnan(ac) & torch.isnan(bc))
        d = torch.nan_to_num((ac - bc).abs().masked_fill_(same, 0.0), nan=math.inf, posinf=math.inf)
        worst = max(worst, float(d.max()))
    return worst


def _float64_bytes(model, inputs: list[Any], refs: list[Any]) -> int:
    """Roughly what a float64 copy of the model, its inputs and its outputs takes."""
    import torch

    tensors = [*model.parameters(), *model.buffers(), *integ.flatten(inputs)]
    n = sum(t.numel() for t in tensors if isinstance(t, torch.Tensor))
    return 8 * (n + 2 * sum(r.numel() for r in refs if isinstance(r, torch.Tensor)))


def reference_noise(ref_model, inputs: list[Any], ref_out: Any, candidate_out: Any = None,
                    atol: float | None = None, rtol: float | None = None) -> NoiseReport:
    """The reference run again in float64 (a deep copy of the model, floating inputs cast) compared
    with its own result `ref_out` on the same inputs: the size of its rounding noise. With
    `candidate_out`, also how far the candidate is from the float64 result, as a multiple of it.
    Skips (measured=False, skipped=why) for integer outputs, a device without float64, or a
    reference that does not run or compute in float64. Call it on failed trials only: it copies
    the model and runs it again."""
    import torch

    refs = integ.flatten(ref_out)
    floats = [i for i, r in enumerate(refs)
              if isinstance(r, torch.Tensor) and (r.is_floating_point() or r.is_complex())]
    if not floats:
        return NoiseReport(skipped="the reference's outputs are not floating point (compared exactly)")
    if all(refs[i].dtype in (torch.float64, torch.complex128) for i in floats):
        return NoiseReport(skipped="the reference already computes in float64")
    out64 = _float64_outputs(ref_model, inputs, refs, floats)
    if isinstance(out64, str):
        return NoiseReport(skipped=out64)
    noise = max(_max_abs(refs[i], out64[i]) for i in floats)
    report = NoiseReport(measured=True, reference_max_abs=min(noise, BIG))
    if atol is not None and rtol is not None:
        report.reference_tol_ratio = min(max(_tol_ratio(refs[i], out64[i], atol, rtol) for i in floats), BIG)
    cands = integ.flatten(candidate_out) if candidate_out is not None else []
    if len(cands) == len(refs) and all(isinstance(cands[i], torch.Tensor) and cands[i].shape == refs[i].shape
                                       for i in floats):
        err = max(_max_abs(cands[i], out64[i]) for i in floats)
        report.candidate_max_abs = min(err, BIG)
        report.error_to_noise = min(err / noise, BIG) if noise > 0 else (0.0 if err == 0 else BIG)
        report.within_noise = err <= WITHIN_NOISE * noise
    report.text = noise_text(report)
    return report


def _tol_ratio(ref, ref64, atol: float, rtol: float) -> float:
    """max |ref - ref64| / (atol + rtol*|ref64|): how much of the tolerance the reference's own rounding uses."""
    import torch

    worst = 0.0
    for rc, r64 in _chunks(ref, ref64):
        r = torch.nan_to_num((rc - r64).abs_() / (r64.abs() * rtol + atol), nan=0.0, posinf=math.inf)
        worst = max(worst, float(r.max()))
    return worst


def noise_text(n: NoiseReport) -> str:
    """One sentence: the candidate's error next to the reference's own rounding."""
    if not n.measured:
        return f"noise not measured: {n.skipped}" if n.skipped else ""
    tight = ""
    if n.reference_tol_ratio is not None and n.reference_tol_ratio > 0.5:
        tight = (f"; the float32 reference itself uses {n.reference_tol_ratio:.0%} of the tolerance: "
                 "the tolerance is about as tight as the reference's own rounding")
    if n.candidate_max_abs is None:
        return f"the reference's own rounding noise (vs float64) is {n.reference_max_abs:.2g}{tight}"
    if n.reference_max_abs == 0:
        exact = "the reference is exact here (a float64 run gives the same values)"
        return exact + ("" if n.candidate_max_abs == 0 else f"; the candidate is {n.candidate_max_abs:.2g} off it")
    if n.within_noise:
        return (f"within noise: the candidate is {n.candidate_max_abs:.2g} from a float64 run of the reference, "
                f"the float32 reference itself {n.reference_max_abs:.2g} ({n.error_to_noise:.2g}x){tight}")
    times = "inf" if n.error_to_noise is None or n.error_to_noise >= BIG else f"{n.error_to_noise:.3g}"
    return (f"error {times}x the reference's own noise (candidate {n.candidate_max_abs:.2g} from a float64 run "
            f"of the reference, the float32 reference {n.reference_max_abs:.2g}){tight}")


def failure_context(ref_model, inputs: list[Any], ref_out: Any, candidate_out: Any, atol: float,
                    rtol: float) -> dict[str, Any]:
    """The fields a failed trial adds to its TrialResult: its real inputs and the noise context.
    Never raises: the verdict does not depend on it."""
    try:
        noise = reference_noise(ref_model, inputs, ref_out, candidate_out, atol, rtol)
    except Exception as exc:
        noise = NoiseReport(skipped=f"measuring it failed: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        described = describe_inputs(inputs)
    except Exception as exc:
        described = [f"inputs not described: {type(exc).__name__}: {str(exc)[:200]}"]
    return {"input_summary": described, "noise": noise.model_dump()}
