"""The judge's tools for correctness and baselines (judge-side only: nothing here touches
candidate code): the comparison with dtype-aware tolerances, other input distributions, fresh
weights, and the reference's eager and torch.compile timing (stitch_mcp.judge runs the stage).
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp import timing as timing_mod



class StageError(Exception):
    def __init__(self, kind: str, message: str, **extra):
        super().__init__(message)
        self.kind, self.message, self.extra = kind, message, extra


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


def compile_baseline_known(record: dict[str, Any]) -> bool:
    """Whether a task's cached baselines (check.py) settle torch.compile: timed, or failed to compile."""
    return bool(record.get("compiled")) or str(record.get("compile_note", "")).startswith("torch.compile failed")


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
    init_args = init_inputs(ref_mod)
    with _gpu_held(spec, torch, ref_mod, init_args, device):
        stage("inputs")
        ref_model = build_model(ref_mod.Model, init_args, device)  # training mode, as in the run stage
        inputs = TimingInputs(ref_mod, device, spec["timing_seeds"])
        stage("timing")
        base = measure_baselines(ref_model, inputs, bench_options(spec, device, inputs),
                                 bool(spec.get("compare_compile")), stage)
    return {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
            "timing": {**base, "baselines_cached": False}}


@contextlib.contextmanager
def _gpu_held(spec: dict[str, Any], torch, ref_mod, init_args: list[Any], device: str):
    """On a GPU: the reference's share of the card's memory, then the device itself (memory before
    the device, as the judge takes them: stitch_mcp.gpu_memory)."""
    if device != "cuda":
        yield
        return
    from stitch_mcp.devices import Gpu, acquire_device
    from stitch_mcp.events import stage
    from stitch_mcp.gpu_memory import held

    gpu = spec.get("lease_gpu")
    with held(gpu, _reference_need(torch, ref_mod, init_args), stage):
        stage("waiting for the device")
        with acquire_device(gpus=[Gpu(**gpu)] if gpu else None):
            yield


def _reference_need(torch, ref_mod, init_args: list[Any]) -> int | None:
    """The reference alone holds about half of what a whole check does (stitch_mcp.gpu_memory.COPIES:
    one copy of each kind, another for torch.compile's model and the timing inputs)."""
    from stitch_mcp.gpu_memory import estimate_need

    need = estimate_need(torch, ref_mod, init_args)
    return None if need is None else need // 2
