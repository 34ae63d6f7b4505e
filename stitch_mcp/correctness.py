"""The run stage (inside a worker): import both programs, prove the candidate correct on fresh
inputs, run the integrity checks that need live tensors, and time it.

Order inside each correctness trial (each with its own seed, input distribution and weights):
1. poison the allocator's free blocks of the outputs' sizes;
2. run the candidate FIRST on a clone of the inputs (no reference result exists anywhere yet);
   on a GPU, copy its output on the current stream before any device-wide synchronize (work left
   on another stream shows up as a difference);
3. compare the inputs with their clones (input mutation), check the outputs are plain dense tensors
   with their own storage and were fully written (no poison left);
4. run the reference on its own clone;
5. poison freed memory again and run the candidate a second time, AFTER the reference;
6. compare both candidate outputs with the reference (dtype-aware tolerances). Right only after the
   reference ran = result reuse.
After the trials: the candidate's output must change with the input where the reference's does;
then timing with fresh input contents copied in before every call, the outputs of the last timed
calls re-checked, harness identities and thread counts compared.
"""

from __future__ import annotations

import inspect
import math
import time
import traceback
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


def reinit_weights(ref_model, new_model, seed: int) -> tuple[bool, str]:
    """Fresh random weights in the reference, copied into the candidate; False when they do not map."""
    import torch

    from stitch_mcp.loader import copy_matching_state

    ref_state = ref_model.state_dict()
    new_state = new_model.state_dict()
    if not ref_state:
        return False, "the model has no parameters"
    missing = [k for k, v in new_state.items() if k not in ref_state or ref_state[k].shape != v.shape]
    if missing:
        return False, f"ModelNew's parameters do not match Model's by name ({', '.join(missing[:3])})"
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
    copy_matching_state(ref_model, new_model)
    return True, ""


# ------------------------------------------------------------------ the stage


def _check_interface(ref_mod, cand_mod, init_args: list[Any], n_inputs: int) -> None:
    if not hasattr(cand_mod, "ModelNew"):
        names = [n for n in dir(cand_mod) if not n.startswith("_") and isinstance(getattr(cand_mod, n), type)]
        raise StageError("interface", "the candidate defines no class ModelNew"
                         + (f" (it defines {', '.join(names[:5])})" if names else ""))
    cls = cand_mod.ModelNew
    try:
        inspect.signature(cls).bind(*init_args)
    except TypeError as exc:
        raise StageError("interface", f"ModelNew's constructor does not accept the reference's "
                                      f"get_init_inputs() ({len(init_args)} argument(s)): {exc}") from None
    except ValueError:
        pass
    fwd = getattr(cls, "forward", None)
    if fwd is None:
        raise StageError("interface", "ModelNew has no forward method")
    try:
        inspect.signature(fwd).bind(None, *([None] * n_inputs))
    except TypeError as exc:
        raise StageError("interface", f"ModelNew.forward does not accept the reference's get_inputs() "
                                      f"({n_inputs} input(s)): {exc}") from None
    except ValueError:
        pass


def _import_candidate(source: str, directory: Path):
    from stitch_mcp.build import BuildError, NeedsGPU
    from stitch_mcp.loader import import_program

    try:
        return import_program(source, "candidate", directory)
    except NeedsGPU:
        raise
    except BuildError as exc:
        raise StageError("compile_error", str(exc), log=exc.text, diagnostics=exc.diagnostics) from None
    except SyntaxError as exc:
        raise StageError("syntax_error", f"SyntaxError: {exc.msg} (line {exc.lineno})", line=exc.lineno) from None
    except BaseException as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(tb) if f.filename.endswith("candidate.py")), None)
        raise StageError("import_error", f"importing the candidate failed: {type(exc).__name__}: {exc}"[:3000],
                         line=line) from None


def _call(model, inputs, what: str):
    try:
        return model(*inputs)
    except StageError:
        raise
    except BaseException as exc:
        from stitch_mcp.crashes import classify_error_text

        text = f"{type(exc).__name__}: {exc}"
        found = classify_error_text(text)
        tb = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(tb) if f.filename.endswith(f"{what}.py")), None)
        kind = found[0] if found else ("reference_error" if what == "reference" else "runtime_error")
        raise StageError(kind, f"{what} forward raised {text}"[:3000] + (f" — {found[1]}" if found else ""),
                         line=line) from None


def run_stage(spec: dict[str, Any]) -> dict[str, Any]:
    from stitch_mcp.events import stage

    res: dict[str, Any] = {"trials": [], "findings": [], "checks_run": [], "stage_seconds": {}, "notes": []}
    try:
        _run(spec, res, stage)
    except StageError as exc:
        res["error"] = {"kind": exc.kind, "message": exc.message, **exc.extra}
    except BaseException as exc:
        from stitch_mcp.build import NeedsGPU

        if isinstance(exc, NeedsGPU):
            res["needs_gpu"] = str(exc)
        else:
            from stitch_mcp.crashes import classify_error_text

            found = classify_error_text(f"{type(exc).__name__}: {exc}")
            res["error"] = {"kind": found[0] if found else "internal",
                            "message": f"{type(exc).__name__}: {exc}"[:3000] + (f" — {found[1]}" if found else ""),
                            "traceback": traceback.format_exc()[-4000:]}
    return res


def _run(spec: dict[str, Any], res: dict[str, Any], stage) -> None:
    t = time.monotonic()
    secs = res["stage_seconds"]

    def lap(name: str) -> None:
        nonlocal t
        now = time.monotonic()
        secs[name] = round(secs.get(name, 0.0) + now - t, 4)
        t = now

    stage("import")
    import torch

    from stitch_mcp.build import BuildCache
    from stitch_mcp.loader import build_model, import_program, init_inputs, make_inputs

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    want = spec.get("device") or "auto"
    device = "cuda" if (want in ("auto", "cuda") and torch.cuda.is_available()) else "cpu"
    res["device"] = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    res["device_kind"] = device
    workdir = Path.cwd()

    try:
        ref_mod = import_program(spec["reference_source"], "reference", workdir)
    except BaseException as exc:
        raise StageError("reference_error", f"importing the reference failed: {type(exc).__name__}: {exc}") from None
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(ref_mod, need):
            raise StageError("reference_error", f"the reference defines no {need}")

    snap = integ.harness_snapshot()
    cache = BuildCache(Path(spec["build_root"]), spec["candidate_source"], allow_build=True)
    cache.install()
    lap("import")
    stage("candidate_import")
    threads0 = integ.thread_snapshot()
    cand_mod = _import_candidate(spec["candidate_source"], workdir)
    res["extensions"] = cache.extensions
    lap("load")
    res["findings"] += integ.check_harness(snap, "when it was imported")
    res["checks_run"].append("monkey_patching")

    stage("inputs")
    try:
        init_args = init_inputs(ref_mod)
        first_inputs = make_inputs(ref_mod, device, spec["plan"][0][0])
    except BaseException as exc:
        raise StageError("reference_error", f"the reference's get_inputs/get_init_inputs failed: "
                                            f"{type(exc).__name__}: {exc}") from None
    _check_interface(ref_mod, cand_mod, init_args, len(first_inputs))
    lap("inputs")
    stage("models")
    try:
        # Models stay in the mode they are built in (training), as KernelBench's harness leaves
        # them: a BatchNorm then normalises with batch statistics in both programs.
        ref_model = build_model(ref_mod.Model, init_args, device)
    except BaseException as exc:
        raise StageError("reference_error", f"building the reference Model failed: {type(exc).__name__}: {exc}") \
            from None
    try:
        new_model = build_model(cand_mod.ModelNew, init_args, device)
    except BaseException as exc:
        raise StageError("init_error", f"ModelNew({', '.join(map(_short, init_args))}) raised "
                                       f"{type(exc).__name__}: {exc}"[:3000]) from None
    from stitch_mcp.loader import copy_matching_state

    res["copied_state"] = len(copy_matching_state(ref_model, new_model))
    res["findings"] += integ.check_harness(snap, "when ModelNew was built")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    # Warm the reference up (thread pools, CUDA context, lazy modules) before the thread snapshot.
    with torch.no_grad():
        warm_ref = _call(ref_model, integ.clone_inputs(first_inputs), "reference")
        sync()
    # shapes and dtypes only (meta tensors): a multi-GB output is not kept alive for this
    templates = [o.to("meta") if isinstance(o, torch.Tensor) else o for o in integ.flatten(warm_ref)]
    out_dtype = next((str(o.dtype).replace("torch.", "") for o in templates if isinstance(o, torch.Tensor)), "")
    atol, rtol = tolerances(out_dtype, spec)
    res["atol"], res["rtol"], res["output_dtype"] = atol, rtol, out_dtype
    warm_finite = all(bool(torch.isfinite(o).all()) for o in integ.flatten(warm_ref)
                      if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex()))
    del warm_ref
    threads1 = integ.thread_snapshot()
    lap("inputs")

    # ---------------------------------------------------------------- correctness trials
    stage("correctness")
    plan = spec["plan"]
    fingerprints = []
    unwritten = reuse = unsynced = False
    mutated = aliased = set()
    for i, (seed, dist, weights) in enumerate(plan):
        stage("correctness", trial=i)
        note, alt = "", None
        if weights == "reinit":
            ok, why = reinit_weights(ref_model, new_model, seed)
            if not ok:
                weights, note = "task", f"weights not re-initialised: {why}"
        if i == 0:
            inputs, first_inputs = first_inputs, None  # held once, not for the whole run
        else:
            inputs = make_inputs(ref_mod, device, seed)
        if dist != "task":
            try:
                alt = distribute(inputs, dist, seed, device)
                with torch.no_grad():
                    alt_ref = _call(ref_model, integ.clone_inputs(alt), "reference")
                sync()
                alt_ok = all(bool(torch.isfinite(o).all()) for o in integ.flatten(alt_ref)
                             if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex()))
                del alt_ref
                if alt_ok or not warm_finite:
                    inputs = alt
                else:
                    note = f"{dist} inputs make the reference non-finite; used the task's inputs"
                    dist = "task"
            except StageError:
                note = f"the reference rejects {dist} inputs; used the task's inputs"
                dist = "task"
        trial = {"trial": i, "seed": seed, "inputs": dist, "weights": weights}
        with torch.no_grad():
            # 1-2: candidate first, on poisoned memory (inputs copied before poisoning, or the copy
            # of an input the size of the output would take the poisoned block)
            cand_in = integ.clone_inputs(inputs)
            integ.poison_free_memory(templates, device)
            out1 = _call(new_model, cand_in, "candidate")
            stream_copy = None
            if device == "cuda":  # what the output holds before a device-wide sync (a copy, or for
                # outputs over 256 MB a fingerprint: sum and samples, so multi-GB tasks fit in memory)
                stream_copy = [(o.clone() if o.numel() * o.element_size() <= 2 ** 28 else integ.fingerprint(o))
                               if isinstance(o, torch.Tensor) else o for o in integ.flatten(out1)]
            sync()
            flat1 = integ.flatten(out1)
            # 3: inputs, plain outputs, fully written
            if integ.check_inputs_unchanged(inputs, cand_in):
                mutated = mutated | {i}
            for f in integ.check_plain_outputs(flat1, cand_in, device):
                if f["code"] == "output_aliases_input":
                    aliased = aliased | {i}
                elif f not in res["findings"]:
                    res["findings"].append(f)
            n_unwritten = sum(integ.unwritten_count(o) for o in flat1 if isinstance(o, torch.Tensor))
            if stream_copy is not None:
                for a, b in zip(stream_copy, flat1):
                    if isinstance(b, torch.Tensor) and (not integ.same_bits(a, b) if isinstance(a, torch.Tensor)
                                                        else a != integ.fingerprint(b)):
                        unsynced = True
                del stream_copy
            del cand_in
            # 4: reference
            ref_out = _call(ref_model, integ.clone_inputs(inputs), "reference")
            sync()
            # 5: candidate again, after the reference, on poisoned memory
            cand_in = integ.clone_inputs(inputs)
            integ.poison_free_memory(templates, device)
            out2 = _call(new_model, cand_in, "candidate")
            del cand_in
            sync()
        c1 = compare(out1, ref_out, atol, rtol)
        c2 = compare(out2, ref_out, atol, rtol)
        if n_unwritten and not c1["ok"]:
            unwritten = True
            c1["problems"].append(f"{n_unwritten} element(s) never written (they still hold the poison value)")
        if c2["ok"] and not c1["ok"]:
            reuse = True
        worst = c1 if not c1["ok"] else c2
        trial.update(worst)
        if not c2["ok"] and c1["ok"]:
            trial["problems"] = trial["problems"] + ["wrong on the second call (after the reference ran)"]
        if note:
            trial["problems"] = [note] + trial["problems"]
        trial["near_zero"] = _near_zero_exploit(out1, ref_out, atol)
        res["trials"].append(trial)
        fingerprints.append((integ.fingerprint(integ.flatten(ref_out)[0]), integ.fingerprint(flat1[0])))
        # free this trial's tensors before the next trial makes its inputs (multi-GB tasks)
        del out1, out2, ref_out, flat1, inputs, alt
        lap("correctness")

    # ---------------------------------------------------------------- trial-level integrity findings
    stage("integrity")
    checks = ["input_mutation", "result_reuse", "unwritten_output", "plain_tensor", "output_varies",
              "tolerance_exploit"]
    if device == "cuda":
        checks.append("stream_sync")
    res["checks_run"] += checks
    if mutated:
        res["findings"].append(integ.finding("input_mutation", f"the candidate modified its inputs in place "
                                             f"(trials {sorted(mutated)}); write results to new tensors"))
    if aliased:
        res["findings"].append(integ.finding("output_aliases_input", "an output shares storage with an input "
                                             "(a view or the input itself); return a new tensor"))
    if reuse:
        res["findings"].append(integ.finding(
            "result_reuse", "the candidate is wrong when it runs before the reference and right after it: its "
            "output picks up memory the reference freed (an allocated output that is never written)"))
    if unwritten:
        res["findings"].append(integ.finding(
            "unwritten_output", "part of the output was never written (it kept the poison value the harness "
            "put into free memory); make every thread write its element and check the grid covers the output"))
    if unsynced:
        res["findings"].append(integ.finding(
            "stream_sync", "the output changed after a device-wide synchronize: work runs on a stream that is "
            "not joined to the current stream; launch on at::cuda::getCurrentCUDAStream() or make the current "
            "stream wait on your stream"))
    if any(t.get("near_zero") for t in res["trials"]):
        res["findings"].append(integ.finding(
            "tolerance_exploit", "the reference's output is within the tolerance of zero and the candidate's "
            "output does not follow it (it passes only because the tolerance is loose), e.g. a constant output",
            confidence="probable"))
    ref_fps = [r for r, _ in fingerprints if r is not None]
    cand_fps = [c for _, c in fingerprints if c is not None]
    if len(ref_fps) >= 2 and len(set(ref_fps)) > 1 and len(set(cand_fps)) == 1:
        res["findings"].append(integ.finding(
            "constant_output", "the candidate returned the same output for different inputs while the "
            "reference's changed: the output does not depend on the input"))
    res["findings"] += integ.check_harness(snap, "while it ran")
    lap("integrity")

    # ---------------------------------------------------------------- timing
    threads2 = integ.thread_snapshot()  # before timing: torch.compile starts its own workers
    if spec.get("timing") and all(t_["ok"] for t_ in res["trials"]) \
            and not any(f["severity"] == "error" for f in res["findings"]):
        stage("timing")
        _timing(spec, res, ref_mod, ref_model, new_model, device, atol, rtol, snap, stage)
        lap("timing")
    res["findings"] += integ.check_threads(threads1, threads2)
    extra_import = integ.check_threads(threads0, threads1)
    res["findings"] += [f for f in extra_import if f["code"] != "native_threads"]
    res["checks_run"] += ["background_threads"]
    # de-duplicate by code
    seen, uniq = set(), []
    for f in res["findings"]:
        if f["code"] not in seen:
            seen.add(f["code"])
            uniq.append(f)
    res["findings"] = uniq


def _near_zero_exploit(out, ref, atol) -> bool:
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


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) < 40 else r[:37] + "..."


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


def _bench_options(spec, device: str, inputs: TimingInputs) -> dict[str, Any]:
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
    from stitch_mcp.events import stage

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
    base = measure_baselines(ref_model, inputs, _bench_options(spec, device, inputs),
                             bool(spec.get("compare_compile")), stage)
    return {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
            "timing": {**base, "baselines_cached": False}}


def _timing(spec, res, ref_mod, ref_model, new_model, device, atol, rtol, snap, stage) -> None:
    import torch

    # No lock here: check.py holds this device (devices.acquire_device) for the whole run stage.
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    inputs = TimingInputs(ref_mod, device, spec["timing_seeds"])
    buf, pool = inputs.buf, inputs.pool
    last: dict[int, Any] = {}

    def run_new(i: int) -> None:
        last[inputs.current] = new_model(*buf)

    kw = _bench_options(spec, device, inputs)
    stage("timing", what="candidate")
    threads_a = integ.thread_snapshot()
    with torch.no_grad():
        cand = timing_mod.bench(run_new, **kw)
    sync()
    res["findings"] += integ.check_threads(threads_a, integ.thread_snapshot())
    res["timing"] = {"method": cand.pop("method"), "candidate": cand}
    # before any baseline: torch.compile itself wraps some torch functions (torch.manual_seed)
    res["findings"] += integ.check_harness(snap, "during timing")
    # outputs of the timed calls, re-checked against the reference for the inputs they were given
    # (one set at a time, after timing: the reference's outputs are not held during it)
    bad, out_bytes = [], 0
    for k in sorted(last):
        out = last.pop(k)
        out_bytes = integ.tensor_bytes(integ.flatten(out))
        with torch.no_grad():
            expected = ref_model(*pool[k])
        if not compare(out, expected, atol, rtol)["ok"]:
            bad.append(k)
        del out, expected
    res["checks_run"].append("timed_outputs")
    if bad:
        res["findings"].append(integ.finding(
            "timed_output_mismatch", "outputs of the timed calls are wrong for the inputs they were given "
            "(the candidate caches results across calls, by pointer, shape or call count)"))
    last.clear()
    # work that escaped the timed stream
    if device == "cuda":
        res["checks_run"].append("side_stream_timing")
        if cand["host_median_ms"] > 3 * cand["median_ms"] + 0.05:
            res["findings"].append(integ.finding(
                "side_stream_timing", f"the events on the current stream measured {cand['median_ms']:.4f} ms "
                f"but the call took {cand['host_median_ms']:.4f} ms until the device was idle: work runs on "
                "another stream or is deferred past the timed interval", confidence="probable"))
    # physical floor
    bw, bw_note = integ.peak_bandwidth(device)
    nbytes = integ.tensor_bytes(pool[0]) + out_bytes
    res["timing"]["floor_bytes"] = nbytes
    if bw:
        floor = nbytes / bw * 1e3
        res["timing"]["floor_ms"] = floor
        res["timing"]["floor_note"] = bw_note
        res["checks_run"].append("physical_floor")
        if cand["median_ms"] < 0.9 * floor:
            res["findings"].append(integ.finding(
                "below_physical_floor", f"measured {cand['median_ms']:.4f} ms, below the physical floor of "
                f"{floor:.4f} ms ({nbytes / 1e6:.1f} MB of inputs and outputs at {bw_note}): impossible for "
                "honest work"))
    # baselines
    keep_compiled = None
    base = spec.get("baselines") or (spec.get("baselines_by_device") or {}).get(res.get("device", ""))
    if base and spec.get("compare_compile") and not base.get("compiled") \
            and not str(base.get("compile_note", "")).startswith("torch.compile failed"):
        base = None  # measured without torch.compile: measure again
    if base and base.get("eager") and cand["median_ms"] > 0:
        ratio = base["eager"]["median_ms"] / cand["median_ms"]
        if not 0.1 <= ratio <= 10:  # a cached baseline taken under load would skew every speedup
            res["notes"].append(f"cached eager baseline gives a {ratio:.3g}x speedup: measured it again")
            keep_compiled, base = base, None
    if base:
        res["timing"]["baselines_cached"] = True
        res["timing"]["eager"] = base.get("eager")
        res["timing"]["compiled"] = base.get("compiled")
        res["timing"]["compile_note"] = base.get("compile_note", "")
    else:
        res["timing"].update(measure_baselines(ref_model, inputs, kw, bool(spec.get("compare_compile")), stage,
                                               keep_compiled))
        res["timing"]["baselines_cached"] = False
