"""The program a profiler runs: import a KernelBench reference (and a candidate), build the model,
warm up, then run the iterations to be measured. Runs in its own process (under nsys or ncu, or
plain for torch.profiler); writes JSON into --out and never prints results to stdout.

    python -m stitch_mcp.profiling.driver torch --ref REF.py --out DIR [--iters N] [--warmup W]
    python -m stitch_mcp.profiling.driver nsys  --ref REF.py --out DIR [--iters N] [--warmup W]
    python -m stitch_mcp.profiling.driver ncu   --ref REF.py --cand CAND.py --out DIR [--lineinfo]

On failure it writes DIR/error.json ({stage, type, message, traceback}) and exits 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ITER_PREFIX = "stitch_iter_"
STAGE = {"name": "start"}


def _stage(name: str) -> None:
    STAGE["name"] = name


def _fail(out: Path, exc: BaseException) -> int:
    tb = traceback.format_exc()
    (out / "error.json").write_text(json.dumps({
        "stage": STAGE["name"], "type": type(exc).__name__, "message": str(exc)[:2000],
        "traceback": tb[-4000:]}))
    sys.stderr.write(tb)
    return 3


def _import(path: Path, module_name: str):
    from stitch_mcp.loader import import_program

    return import_program(path.read_text(encoding="utf-8"), module_name, path.parent / "modules")


def _device():
    import torch

    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def _device_meta(device) -> dict[str, Any]:
    import torch

    meta: dict[str, Any] = {"on_gpu": device.type == "cuda", "torch": torch.__version__}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        meta.update(device=p.name, sm_count=p.multi_processor_count, cc=[p.major, p.minor],
                    clock_khz=getattr(p, "clock_rate", None))
    else:
        import platform

        meta.update(device=f"CPU ({platform.processor() or platform.machine()})")
    return meta


# ------------------------------------------------------------------ FLOPs and bytes per op


def _tensors(obj: Any, acc: list) -> list:
    import torch

    if isinstance(obj, torch.Tensor):
        acc.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, acc)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, acc)
    return acc


def op_costs(model: Any, inputs: list) -> dict[str, dict[str, Any]]:
    """Per top-level torch call (F.conv2d, torch.relu, Tensor.add, ...): FLOPs from
    torch.utils.flop_counter and bytes read+written (distinct tensors' sizes), summed by op key.

    Top-level torch calls correspond to the top-level aten ops a profiler shows (aten::conv2d,
    aten::relu, ...), so the digest joins the two by `names.op_key`.
    """
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils.flop_counter import FlopCounterMode

    from stitch_mcp.profiling.names import op_key

    costs: dict[str, dict[str, Any]] = {}

    class Costs(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "") or ""
            if name in ("__get__", "__set__", "size", "dim", "numel", "shape", "is_contiguous", "stride",
                        "data_ptr", "element_size", "__len__", "__format__", "__repr__", "item", "tolist"):
                return func(*args, **kwargs)
            with FlopCounterMode(display=False) as fc:
                out = func(*args, **kwargs)
            outs = _tensors(out, [])
            if not outs:
                return out
            ins = _tensors((args, kwargs), [])
            seen, nbytes = set(), 0
            in_storages = set()
            for t in ins:
                try:
                    in_storages.add(t.untyped_storage().data_ptr())
                except Exception:
                    pass
            view_only = True
            for t in ins + outs:
                try:
                    key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
                except Exception:
                    continue
                if key in seen:
                    continue
                seen.add(key)
                nbytes += t.numel() * t.element_size()
            for t in outs:
                try:
                    if t.untyped_storage().data_ptr() not in in_storages:
                        view_only = False
                except Exception:
                    view_only = False
            if view_only and name not in ("add_", "mul_", "relu_", "copy_", "__iadd__", "__imul__", "clamp_",
                                          "sub_", "div_"):
                nbytes = 0  # a view (reshape, transpose, ...) moves no data
            k = op_key(name)
            row = costs.setdefault(k, {"flops": 0.0, "bytes": 0.0, "calls": 0, "dtype": str(outs[0].dtype)})
            row["flops"] += float(fc.get_total_flops())
            row["bytes"] += float(nbytes)
            row["calls"] += 1
            return out

    with torch.no_grad(), Costs():
        model(*inputs)
    return costs


# ------------------------------------------------------------------ modes


def _load_reference(ref: Path, device, seed: int = 0):
    import torch

    from stitch_mcp.loader import build_model, init_inputs, make_inputs

    _stage("import reference")
    reference = _import(ref, "stitch_reference")
    _stage("build Model(*get_init_inputs())")
    # the same program compile_and_check times: training mode as built, float32 without TF32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = build_model(reference.Model, init_inputs(reference), device, seed)
    _stage("get_inputs()")
    inputs = make_inputs(reference, device, seed)
    return reference, model, inputs


def run_reference(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch

    device = _device()
    meta = _device_meta(device)
    _, model, inputs = _load_reference(Path(args.ref), device)
    _stage("forward (warm-up)")
    with torch.no_grad():
        for _ in range(args.warmup):
            model(*inputs)
        _sync(device)
        # plain wall time per iteration, without any profiler overhead
        walls = []
        for _ in range(args.iters):
            t0 = time.perf_counter()
            model(*inputs)
            _sync(device)
            walls.append((time.perf_counter() - t0) * 1e3)
    meta["wall_ms"] = walls
    _stage("forward (profiled)")
    if args.mode == "torch":
        from torch.profiler import ProfilerActivity, profile, record_function

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with torch.no_grad(), profile(activities=acts, record_shapes=False) as prof:
            for i in range(args.iters):
                with record_function(f"{ITER_PREFIX}{i}"):
                    model(*inputs)
                    _sync(device)
        _stage("export trace")
        prof.export_chrome_trace(str(out / "trace.json"))
    else:  # nsys: NVTX ranges per iteration and per op
        import torch.cuda.nvtx as nvtx

        with torch.no_grad(), torch.autograd.profiler.emit_nvtx(record_shapes=False):
            for i in range(args.iters):
                nvtx.range_push(f"{ITER_PREFIX}{i}")
                model(*inputs)
                _sync(device)
                nvtx.range_pop()
    meta["iterations"] = args.iters
    _stage("count FLOPs and bytes")
    try:
        meta["costs"] = op_costs(model, inputs)
    except Exception as exc:  # counting is a bonus; the profile stands without it
        meta["costs"] = {}
        meta["costs_error"] = f"{type(exc).__name__}: {exc}"
    _sync(device)
    return meta


def run_candidate(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch

    from stitch_mcp.loader import build_model, init_inputs, make_inputs

    device = _device()
    meta = _device_meta(device)
    if args.build_root:
        # compile_and_check's build cache: the candidate's extension is imported from the .so that
        # its check built (~0 s) instead of a cold load_inline under ncu (23 s+ on an H100)
        from stitch_mcp.build.build_cache import BuildCache

        cache = BuildCache(Path(args.build_root), Path(args.cand).read_text(encoding="utf-8"), allow_build=True)
        cache.install()
    if args.lineinfo:
        _add_lineinfo()
    _stage("import reference")
    reference = _import(Path(args.ref), "stitch_reference")
    _stage("import candidate (build)")
    t0 = time.perf_counter()
    candidate = _import(Path(args.cand), "stitch_candidate")
    meta["import_s"] = time.perf_counter() - t0
    if args.build_root:
        meta["extensions_cached"] = [bool(e.get("cached")) for e in cache.extensions]
    _stage("build ModelNew(*get_init_inputs())")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = build_model(candidate.ModelNew, init_inputs(reference), device)
    _stage("get_inputs()")
    inputs = make_inputs(reference, device, 0)
    _stage("forward (warm-up)")
    with torch.no_grad():
        model(*inputs)
        _sync(device)
        _stage("forward (profiled)")
        if device.type == "cuda":
            torch.cuda.profiler.start()
        model(*inputs)
        _sync(device)
        if device.type == "cuda":
            torch.cuda.profiler.stop()
    return meta


def _add_lineinfo() -> None:
    """Compile load_inline/load CUDA sources with -lineinfo so ncu can map samples to source lines."""
    import torch.utils.cpp_extension as ext

    for fname in ("load_inline", "load"):
        original = getattr(ext, fname)

        def wrapped(*a, __orig=original, **kw):
            flags = list(kw.get("extra_cuda_cflags") or [])
            if "-lineinfo" not in flags:
                flags.append("-lineinfo")
            kw["extra_cuda_cflags"] = flags
            return __orig(*a, **kw)

        setattr(ext, fname, wrapped)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="stitch_mcp.profiling.driver")
    p.add_argument("mode", choices=["torch", "nsys", "ncu"])
    p.add_argument("--ref", required=True)
    p.add_argument("--cand")
    p.add_argument("--out", required=True)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--lineinfo", action="store_true")
    p.add_argument("--build-root", default="", help="compile_and_check's build cache to import extensions from")
    args = p.parse_args(argv)
    if args.mode == "ncu":  # the candidate's code runs here, as in a room (stitch_mcp.room)
        from stitch_mcp.syscall_filter import restrict

        restrict()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        meta = run_candidate(args, out) if args.mode == "ncu" else run_reference(args, out)
    except BaseException as exc:  # noqa: BLE001 - everything the program does is reported
        return _fail(out, exc)
    (out / "meta.json").write_text(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
