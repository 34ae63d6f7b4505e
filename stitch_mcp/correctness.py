"""The judge's tools for correctness and baselines (judge-side only: nothing here touches
candidate code): the comparison with dtype-aware tolerances, other input distributions, fresh
weights, and the reference's eager and torch.compile timing (stitch_mcp.judge runs the stage).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp import timing as timing_mod



class StageError(Exception):
    def __init__(self, kind: str, message: str, **extra):
        super().__init__(message)
        self.kind, self.message, self.extra = kind, message, extra


# ------------------------------------------------------------------ inputs and weights


# Elements drawn at a time by `distribute`: its temporaries stay a few of these in size, however large
# the input (the check's GPU memory share counts the inputs it makes, not the draws behind them).
DRAW_CHUNK = 1 << 24
# An input of a few values redrawn in its pattern gets one value as far out as the farthest of this
# many draws (_few_values): a clamp on it shows as on a redraw of a large input's every element.
FAR_DRAWS = 1 << 16


def distribute(inputs: list[Any], kind: str, seed: int, device: str) -> list[Any]:
    """Replace floating-point inputs by another distribution with the task's mean/scale and sign,
    and the task's structure (_keep_structure): a candidate that uses what the task promises of its
    inputs (a triangular or symmetric matrix, rows of probabilities, labels of -1 and 1) is not
    tested outside it. Red team, 2026-11-27: KernelBench's triangular and symmetric matmuls done the
    way their names invite failed the normal and heavy-tailed trials."""
    import torch

    if kind == "task":
        return inputs
    gen = torch.Generator(device=device).manual_seed(seed)

    def one(x):
        if isinstance(x, (list, tuple)):
            return type(x)(one(v) for v in x)
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 2:
            return x
        values = _few_values(torch, x)
        if values is not None and _labels(values):
            return x  # labels of -1 and 1, a mask of 0 and 1 (or of 0 and 1.25): a set the task draws from; kept
        xf = x.float()
        mean, std, low = float(xf.mean()), float(xf.std()), float(xf.min())
        del xf
        std = std if std > 0 and math.isfinite(std) else 1.0

        def drawn(n: int):
            z = _draw(torch, n, kind, gen, device)
            return (z * std).abs() + max(low, 0.0) if low >= 0 else z * std + mean

        y = torch.empty(x.shape, dtype=torch.float32, device=device)
        flat, new = x.reshape(-1), drawn(len(values)) if values is not None else None
        if new is not None:  # as far out as a redraw of many elements would reach: a clamp on a few values shows
            far = drawn(FAR_DRAWS)
            new[(new - mean).abs().argmax()] = far[(far - mean).abs().argmax()]
        at = 0
        for part in y.view(-1).split(DRAW_CHUNK):
            task = flat[at:at + part.numel()]
            # a few values that are not labels (a column repeated along a row): each redrawn, the pattern kept
            part.copy_(new[torch.bucketize(task, values)] if new is not None else drawn(part.numel()))
            part.masked_fill_(task == 0, 0.0)  # the task's zeros: a triangle, a band
            at += part.numel()
        y = _keep_structure(torch, x, y, low)
        if _whole(torch, x):  # float indices or counts: whole numbers within the task's range (red team, 6th round)
            y.round_().clamp_(low, float(x.max()))
        return y.to(x.dtype)

    return [one(v) for v in inputs]


def _few_values(torch, x):
    """The sorted values of a float tensor that takes 8 or fewer (labels, masks, a column repeated
    along a row), else None. Labels and masks (whole multiples of one value: _labels) keep the
    task's values: redrawn, they would leave the set the task draws them from. Others keep only
    their pattern, one of their new values as far out as the farthest of FAR_DRAWS draws: kept
    whole, a clamp on a repeated column went unseen (red team, 2026-11-27)."""
    flat = x.reshape(-1)
    values = torch.unique(flat[:: max(1, flat.numel() // 4096)])
    if values.numel() > 8 or flat.numel() < 4 * values.numel():
        return None
    return values if all(bool(torch.isin(part, values).all()) for part in flat.split(DRAW_CHUNK)) else None


def _whole(torch, x) -> bool:
    """Every element a whole number (float indices, counts): redrawn, they stay whole and within the
    task's range. A candidate rounding such an index where the reference truncates it was called
    wrong on fractions the task never makes; out of range, an index would fail the reference (and on
    a GPU, its context)."""
    return all(bool((part == part.round()).all()) for part in x.reshape(-1).split(DRAW_CHUNK))


def _labels(values) -> bool:
    """A few values that are whole multiples of the smallest of them in size: labels, masks, a
    dropout's mask of 0 and 1/(1-p) (red team, 2026-11-27), not a column of random values."""
    unit = values.abs()[values != 0].min() if bool((values != 0).any()) else values.new_ones(())
    ratios = values / unit
    return bool((ratios == ratios.round()).all())


def _keep_structure(torch, x, y, low: float):
    """The task's symmetry (x equal to its transpose in the last two dimensions) and probabilities
    (summing to one along a dimension: KernelBench's KL divergence takes them along the last, a
    cross-entropy's soft targets along the second) carried over to the draw `y`."""
    if x.dim() >= 2 and x.shape[-1] == x.shape[-2] > 1 and torch.equal(x, x.mT):
        y = y.triu() + y.triu(1).mT
    for dim in range(x.dim()) if low >= 0 else []:  # along whichever dimension holds the probabilities
        if x.shape[dim] > 1 and bool(torch.allclose(x.sum(dim, dtype=torch.float32), torch.ones((), device=x.device),
                                                    atol=1e-3)):
            y.div_(y.sum(dim, keepdim=True).clamp_min(1e-30))
            break
    return y


def _draw(torch, n: int, kind: str, gen, device: str):
    """n standard draws: normal, or Student t with 3 degrees of freedom (finite variance 3) scaled to
    variance 1 for "heavy_tailed"."""
    z = torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    if kind == "heavy_tailed":
        chi = sum(torch.randn(n, generator=gen, device=device, dtype=torch.float32) ** 2 for _ in range(3))
        z = z / torch.sqrt(chi / 3).clamp_min(1e-3) / math.sqrt(3)
    return z


def perturb_weights(ref_model, seed: int) -> None:
    """Fresh random weights in the reference (reset_parameters where a module has it, plus noise
    of half each parameter's spread); the judge shares them with the candidate's room. Buffers keep
    their values: masks, tables and statistics that a candidate may compute itself."""
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
            # one-element ones too (a scalar gain frozen passed), and complex ones (a frozen filter passed)
            if (p.is_floating_point() or p.is_complex()) and p.numel():
                size = p.detach().abs() if p.is_complex() else p.detach()
                spread = float(size.float().std()) if p.numel() > 1 else abs(float(size))
                p.add_(torch.randn_like(p) * (spread if spread > 0 else 0.1) * 0.5)


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
                      stage, compiled: Compiled | None = None, raise_oom: bool = False) -> dict[str, Any]:
    """The reference timed in eager mode and (when asked) under torch.compile, the same way as the
    candidate. `compiled`: the reference compiled already (compile_reference), else compiled here.
    Running out of GPU memory in torch.compile raises with `raise_oom` (the baseline worker is run
    again with the whole card), else leaves it untimed, with a note that is not cached as a
    failure."""
    import torch

    buf = inputs.buf
    stage("timing", what="eager")

    def run_ref(i: int) -> None:
        ref_model(*buf)

    with torch.no_grad(), timing_mod.one_core(kw["device"]):
        eager = timing_mod.bench(run_ref, **kw)
    eager.pop("method", None)
    out: dict[str, Any] = {"eager": eager, "compiled": None, "compile_note": ""}
    if not compare_compile:
        return out
    if compiled is None:
        stage("timing", what="torch.compile")
        compiled = compile_reference(ref_model, buf, kw["device"], raise_oom)
    out["compile_note"] = compiled.note
    if compiled.model is not None:
        try:
            with torch.no_grad(), timing_mod.one_core(kw["device"]):
                comp = timing_mod.bench(lambda i: compiled.model(*buf), **kw)
        except Exception as exc:
            out["compile_note"] = _compile_failure(exc, raise_oom, "timing it")
            return out
        comp.pop("method", None)
        out["compiled"] = comp
    return out


@dataclass
class Compiled:
    """The reference under torch.compile, compiled by a first call; `model` None where that failed."""

    model: Any
    note: str


def compile_reference(ref_model, buf: list[Any], device: str, raise_oom: bool = False) -> Compiled:
    """torch.compile (default mode) of the reference, compiled by a first call on `buf`. Compiling
    needs the GPU but not the GPU to itself: the baseline worker does it before its device lease."""
    import torch

    t0 = time.monotonic()
    try:
        model = torch.compile(ref_model)
        with torch.no_grad(), timing_mod.one_core(device):  # its C++ keeps the thread count it is compiled with
            model(*buf)
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:
        return Compiled(None, _compile_failure(exc, raise_oom, "compiling"))
    return Compiled(model, f"torch.compile (default mode); compiling took {time.monotonic() - t0:.1f} s")


def _compile_failure(exc: Exception, raise_oom: bool, doing: str) -> str:
    """The note for torch.compile's baseline that raised `exc` while `doing` ("compiling" or
    "timing it"). Only "torch.compile failed", a failure to compile, is cached for the task
    (compile_baseline_known); running out of memory is the memory's fault, not torch.compile's:
    raised with `raise_oom`; these and a failure when timed are noted so the next check times it."""
    from stitch_mcp.gpu_memory import out_of_memory

    if out_of_memory(f"{type(exc).__name__} {exc}"):
        if raise_oom:
            raise exc
        return f"torch.compile's baseline ran out of GPU memory while {doing}: not timed"
    if "cuda error" in str(exc).lower():  # the device's or the context's failure, not the compiler's: not cached
        return f"torch.compile's baseline met a CUDA error while {doing}: not timed ({str(exc)[:300]})"
    failed = "torch.compile failed" if doing == "compiling" else f"torch.compile's baseline failed while {doing}"
    return f"{failed}: {type(exc).__name__}: {str(exc)[:300]}"


def baseline_stage(spec: dict[str, Any]) -> dict[str, Any]:
    """Only the reference's baselines (a worker stage of its own): check.py starts it with a task's
    first check, so that no judge compiles torch.compile's baseline while it holds the device. It
    compiles the reference beside the check, with a share of GPU memory held, then gives the share
    back and times eager and torch.compile with a share again and the device to itself once no check
    of the task runs (_time_quietly); the result is cached for the task (check.py)."""
    from stitch_mcp.events import stage

    stage("import")
    import torch

    from stitch_mcp.loader import build_model, import_program, init_inputs

    torch.backends.cuda.matmul.allow_tf32 = False  # as in the run stage
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ref_mod = import_program(spec["reference_source"], "reference", Path.cwd())
    init_args = init_inputs(ref_mod)
    compare_compile = bool(spec.get("compare_compile"))
    if compare_compile:
        _import_compiler()
        ref_model, compiled = compile_beside(spec, torch, ref_mod, init_args, device, stage, raise_oom=True)
    else:
        with _memory_held(spec, torch, ref_mod, init_args, device):
            ref_model, compiled = build_model(ref_mod.Model, init_args, device), None  # training mode, as the run stage's
            free_cuda_cache()
    # the weights (and the compiled model) stay on the card, outside any share, until it is timed
    base = _time_quietly(spec, torch, ref_mod, init_args, device, ref_model, compiled)
    return {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
            "timing": {**base, "baselines_cached": False}}


class CompileCrashed(Exception):
    """Compiling the reference left this process unable to go on (a CUDA error in its context)."""


def compile_beside(spec: dict[str, Any], torch, ref_mod, init_args: list[Any], device: str, stage,
                   raise_oom: bool = False, need_of=None, on_wait=None,
                   seconds: dict[str, float] | None = None) -> tuple[Any, Compiled]:
    """The reference built (training mode, as the run stage's) and compiled by torch.compile's first
    call on one set of its inputs, beside other checks: on a GPU with the share of memory that
    takes (gpu_memory.compile_need) and not the device. Its seconds of CPU hold nothing larger:
    on a GPU it is compiled on fake tensors first (compile_on_fake_tensors), outside the share, and
    the share is held for a first call that finds the code compiled (`seconds["compile_fake"]`).
    The weights and the compiled model stay on the card afterwards, outside any share, until they
    are timed. Errors other than compiling's (the reference's own) raise. `need_of`: as _memory_held's
    (default gpu_memory.compile_need), for a caller that has the need already; `on_wait`: as
    gpu_memory.held's."""
    from stitch_mcp.events import COMPILING_BASELINE
    from stitch_mcp.gpu_memory import compile_need
    from stitch_mcp.loader import build_model, make_inputs

    if device == "cuda":
        stage(COMPILING_BASELINE)  # our code on the reference, as the real compile below (worker.WAITING_STAGES)
        fake_s = compile_on_fake_tensors(torch, ref_mod, init_args, device)
        if seconds is not None and fake_s is not None:
            seconds["compile_fake"] = round(fake_s, 4)
    else:
        fake_s = None
    with _memory_held(spec, torch, ref_mod, init_args, device, need_of or compile_need, on_wait):
        ref_model = build_model(ref_mod.Model, init_args, device)
        first = make_inputs(ref_mod, device, spec["timing_seeds"][0])
        buffers = {name: b.clone() for name, b in ref_model.named_buffers()}  # e.g. BatchNorm's running stats
        stage(COMPILING_BASELINE)
        compiled = compile_reference(ref_model, first, device, raise_oom)
        if fake_s is not None:
            compiled.note += f", after {fake_s:.1f} s on fake tensors outside the memory share"
        if compiled.model is None and device == "cuda":
            try:  # a CUDA error while compiling leaves the context broken for what follows
                torch.cuda.synchronize()
            except Exception as exc:
                raise CompileCrashed(f"torch.compile's baseline broke the CUDA context while compiling: "
                                     f"{type(exc).__name__}: {str(exc)[:300]}") from None
        stage("compiled")
        with torch.no_grad():  # the model as built: its first call was compiling's, not the check's
            for name, b in ref_model.named_buffers():
                if name in buffers:
                    b.copy_(buffers[name])
        first = buffers = None
        free_cuda_cache()
    return ref_model, compiled


def compile_on_fake_tensors(torch, ref_mod, init_args: list[Any], device: str) -> float | None:
    """Compile the reference with torch.compile's compiler (inductor) on fake tensors: its model and
    inputs made with no memory behind them, each graph compiled and then run as traced (on fake
    tensors, nothing launched). The compiled code lands in inductor's caches, where torch.compile's
    real first call finds it, so that call holds its share of the card for a trace and one run, not
    for the seconds of CPU compiling takes (twelve checks at once held 9-11 of the card's 32 memory
    shares each that long: docs/benchmarks/gpu-h100-2026-11-26-lazy.md). Any failure here only
    leaves the real first call all the work. Seconds taken; None where it failed.

    Fake CUDA tensors start this process's CUDA context (and inductor loads its kernels into it), so
    the context (~0.5 GB on an H100) now exists while the judge waits for its compile share, outside
    any share, as it already did while the judge waits for its check's share after compiling; the
    shares' estimates count it once held (gpu_memory: OVERHEAD_BYTES, BASELINE_OVERHEAD_BYTES)."""
    t0 = time.monotonic()
    try:
        from torch._inductor.compile_fx import compile_fx
        from torch._subclasses.fake_tensor import FakeTensorMode

        from stitch_mcp.loader import make_inputs

        def compile_then_trace(graph, example_inputs):
            compile_fx(graph, example_inputs)  # what torch.compile's default backend does with them
            return graph.forward

        with FakeTensorMode(allow_non_fake_inputs=True):  # constants a reference made at import are real
            with torch.device(device):  # as loader.build_model's first try; a fake parameter cannot be moved
                torch.manual_seed(0)
                model = ref_mod.Model(*init_args)
            inputs = make_inputs(ref_mod, device, 0)
            with torch.no_grad(), timing_mod.one_core(device):  # as the real compile: the same C++ threads
                torch.compile(model, backend=compile_then_trace)(*inputs)
        return time.monotonic() - t0
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            torch._dynamo.reset()  # the real compile traces afresh (and finds the code in the caches)


QUIET_TRIES = 20


def _time_quietly(spec: dict[str, Any], torch, ref_mod, init_args: list[Any], device: str, ref_model,
                  compiled: Compiled | None) -> dict[str, Any]:
    """The baselines timed while no check of the task runs: a candidate that kept the GPU busy
    outside the device lease (at import, in its first call, from a thread) while they are timed
    would make every later candidate of the task look faster. check.py's _TaskActivity writes
    "<checks running> <checks started>" to spec["activity_file"]; a timing is kept only where
    none ran from before it to after it and none started meanwhile."""
    from stitch_mcp.events import WAITING_FOR_CANDIDATES, stage

    path = spec.get("activity_file")
    for _ in range(QUIET_TRIES):
        if path:
            stage(WAITING_FOR_CANDIDATES)
        started, kept = _wait_quiet(path), None
        with _memory_held(spec, torch, ref_mod, init_args, device):
            stage("inputs")
            inputs = TimingInputs(ref_mod, device, spec["timing_seeds"])
            with _device_held(spec, device):
                stage("timing")
                if _quiet(path) == (0, started):
                    base = measure_baselines(ref_model, inputs, bench_options(spec, device, inputs),
                                             bool(spec.get("compare_compile")), stage, compiled, raise_oom=True)
                    kept = base if _quiet(path) == (0, started) else None
            inputs = None
            free_cuda_cache()  # before the share is given back
        if kept is not None:
            return kept
    raise StageError("baseline_contended", f"checks of the task kept starting while its baselines were timed "
                                           f"({QUIET_TRIES} tries)")


def _quiet(path: str | None) -> tuple[int, int] | None:
    """(checks of the task running, checks of it started so far) from check.py's activity file;
    (0, 0) without one; None where it cannot be read (being rewritten): not quiet."""
    if not path:
        return (0, 0)
    try:
        running, started = Path(path).read_text().split()
        return int(running), int(started)
    except (OSError, ValueError):
        return None


def _wait_quiet(path: str | None) -> int:
    """Wait until no check of the task runs; the number started so far."""
    while True:
        state = _quiet(path)
        if state is not None and state[0] == 0:
            return state[1]
        time.sleep(0.05)


def _import_compiler() -> None:
    """Import torch.compile's compiler before the memory share is held: seconds of a first compile
    that need no GPU memory."""
    try:
        import torch._inductor.compile_fx  # noqa: F401
        import torch._inductor.codegen.triton  # noqa: F401
    except Exception:  # compiling reports it
        pass


@contextlib.contextmanager
def _memory_held(spec: dict[str, Any], torch, ref_mod, init_args: list[Any], device: str, need_of=None,
                 on_wait=None):
    """On a GPU: the reference's share of the card's memory (stitch_mcp.gpu_memory; `need_of`, by
    default baseline_need, says how much), from before its first allocation; the device
    (_device_held) is taken inside it, as the judge takes them."""
    if device != "cuda":
        yield
        return
    from stitch_mcp.events import stage
    from stitch_mcp.gpu_memory import baseline_need, held

    need = None if spec.get("whole_card") else (need_of or baseline_need)(torch, ref_mod, init_args)
    with held(spec.get("lease_gpu"), need, stage, on_wait=on_wait):
        yield


def free_cuda_cache() -> None:
    """Give what this process's caching allocator holds back to the driver, before a memory share
    is given back (the next check may take the share at once)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        import gc

        gc.collect()
        with contextlib.suppress(Exception):  # a context left broken by an error: its exit frees it all
            torch.cuda.synchronize()
            torch.cuda.empty_cache()


@contextlib.contextmanager
def _device_held(spec: dict[str, Any], device: str):
    """On a GPU: the device lease (stitch_mcp.devices), for timing."""
    if device != "cuda":
        yield
        return
    from stitch_mcp.devices import Gpu, acquire_device
    from stitch_mcp.events import stage

    gpu = spec.get("lease_gpu")
    stage("waiting for the device")
    with acquire_device(gpus=[Gpu(**gpu)] if gpu else None):
        yield
