#!/usr/bin/env python
"""stitch-mcp benchmark suite: one entry point, a Markdown + JSON report.

    python tools/bench_suite.py [--gpu] [--out docs/benchmarks] [--parts machine,handshake,...]
    python tools/bench_suite.py --gpu --prepare          # here: copy KernelBench problems into .gpu/bench

Parts (each writes WORK/parts/<part>.json; the report is rebuilt from every part present, so a
GPU run can be split over several commands that each fit a time limit):

  machine    device, driver, versions, cores, load
  handshake  spawn `stitch-mcp serve` -> tools/list over stdio (tools/bench_handshake.py)
  check      compile_and_check cold / changed candidate / already built, per task, split by stage
             (tools/bench_check.py, in a fresh cache and workspace)
  repeat     each repeat pair's candidate 5 times (fresh workspace each, so eager is re-timed too; on a
             CPU eager's relu against a C++ loop, a millisecond of matmul and tanh, and eager's own relu): spread and
             coefficient of variation of the speedup (--busy N: beside N busy loops, a loaded host); on GPU also the reported time against Nsight
             Compute's gpu__time_duration (profile_kernel)
  search     search_cuda_docs build, cold first query, warm p50/p95, hit@5 (tools/bench_search.py)
  batch      candidates per device-hour on a batch (`stitch-mcp eval`): cold (empty build cache) and
             warm; on GPU a level-1 + level-2 batch, warm with STITCH_GPUS=<first> and with every
             GPU: the scaling figure (target: N GPUs >= 0.9 N x one GPU's rate)
  report     (always) writes OUT/<cpu|gpu>-<date>.md and .json

CPU (default): what runs without a GPU, on purpose-written programs from tests/programs.
GPU (--gpu): KernelBench problems prepared into .gpu/bench (git-ignored; carry it to the GPU machine).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
CORPORA = ROOT / "corpora"
PROGRAMS = ROOT / "tests" / "programs"
GPU_DIR = ROOT / ".gpu" / "bench"
KERNELBENCH = Path(os.environ.get("KERNELBENCH", "/work/shared/kernelbench"))
sys.path[:0] = [str(ROOT), str(TOOLS)]

ALL_PARTS = ["machine", "handshake", "check", "repeat", "search", "batch"]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(cmd: list[str], timeout: float = 30) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (out.stdout or out.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({type(exc).__name__})"


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env.update(extra)
    return env


def stats(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {}
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"n": len(values), "median": round(statistics.median(values), 6), "mean": round(mean, 6),
            "min": round(min(values), 6), "max": round(max(values), 6), "cv": round(sd / mean, 4) if mean else None,
            "spread": round(max(values) / min(values), 4) if min(values) > 0 else None}


# ------------------------------------------------------------------ problems


def cpu_problems(work: Path) -> dict[str, Path]:
    """Folders for the CPU run, from tests/programs: check (NAME_ref/cand/cand2) and batch."""
    check = work / "problems" / "check"
    check.mkdir(parents=True, exist_ok=True)
    cpp = (PROGRAMS / "cand_relu_cpp.py").read_text()
    shutil.copy(PROGRAMS / "ref_relu.py", check / "relu_cpp_ref.py")
    (check / "relu_cpp_cand.py").write_text(cpp)
    changed = cpp.replace("out[i] = in[i] > 0.0f ? in[i] : 0.0f;", "out[i] = std::max(in[i], 0.0f);")
    assert changed != cpp
    (check / "relu_cpp_cand2.py").write_text(changed)
    shutil.copy(PROGRAMS / "ref_scale.py", check / "scale_torch_ref.py")
    shutil.copy(PROGRAMS / "cand_scale_ok.py", check / "scale_torch_cand.py")
    (check / "scale_torch_cand2.py").write_text((PROGRAMS / "cand_scale_ok.py").read_text()
                                                .replace("x * self.factor", "self.factor * x"))
    probs, cands = work / "problems" / "batch", work / "problems" / "batch_candidates"
    for d in (probs, cands):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    batch = {"relu": ("ref_relu", ["cand_relu_torch", "cand_relu_cpp", "cand_wrong", "cand_mutate"]),
             "scale": ("ref_scale", ["cand_scale_ok", "cand_clamp_range", "cand_alias"]),
             "linear": ("ref_linear", ["cand_linear_ok", "cand_linear_frozen"])}
    for name, (ref, cs) in batch.items():
        shutil.copy(PROGRAMS / f"{ref}.py", probs / f"{name}.py")
        (cands / name).mkdir()
        for c in cs:
            shutil.copy(PROGRAMS / f"{c}.py", cands / name / f"{c}.py")
    return {"check": check, "batch": probs, "batch_candidates": cands,
            "repeat_pairs": [(PROGRAMS / "ref_relu.py", PROGRAMS / "cand_relu_cpp.py"),  # eager's harness dominates
                             (PROGRAMS / "ref_mm_tanh.py", PROGRAMS / "cand_mm_tanh.py"),  # a millisecond of compute
                             (PROGRAMS / "ref_relu.py", PROGRAMS / "cand_relu_eager.py")]}  # eager's own relu: 1.0x


GPU_BATCH = {  # problem name -> (KernelBench file, candidate sources)
    "L1_19_ReLU": ("level1/19_ReLU.py", ["check:relu_cand", "check:relu_cand2", "ext:level1_body"]),
    "L1_20_LeakyReLU": ("level1/20_LeakyReLU.py",
                        ["ew:ModelNew:self.negative_slope = negative_slope:ext.ew_leaky_relu(x.contiguous(), "
                         "self.negative_slope):negative_slope: float = 0.01"]),
    "L1_21_Sigmoid": ("level1/21_Sigmoid.py", ["ew:ModelNew::ext.ew_sigmoid(x.contiguous()):"]),
    "L1_22_Tanh": ("level1/22_Tanh.py", ["ew:ModelNew::ext.ew_tanh(x.contiguous()):"]),
    "L1_25_Swish": ("level1/25_Swish.py", ["ew:ModelNew::ext.ew_swish(x.contiguous()):"]),
    "L1_1_Square_matmul": ("level1/1_Square_matrix_multiplication_.py", ["check:matmul_cand", "check:matmul_cand2"]),
    "L2_12_Gemm_Multiply_LeakyReLU": ("level2/12_Gemm_Multiply_LeakyReLU.py",
                                      ["check:gemm_fused_cand", "check:gemm_fused_cand2", "ext:level2_body"]),
}


def _elementwise_candidate(spec: str) -> str:
    _, _, init_body, call, ctor_args = spec.split(":", 4)
    base = (CORPORA / "batch" / "elementwise_ext.py").read_text()
    init = f"        {init_body}\n" if init_body else ""
    return (f"{base}\n\nclass ModelNew(nn.Module):\n    def __init__(self{', ' + ctor_args if ctor_args else ''}):\n"
            f"        super().__init__()\n{init}\n    def forward(self, x):\n        return {call}\n")


def prepare_gpu() -> None:
    """Copy the level-1/level-2 problems and their candidates into .gpu/bench (run where KernelBench is)."""
    probs, cands, check = GPU_DIR / "batch", GPU_DIR / "batch_candidates", GPU_DIR / "check"
    for d in (probs, cands, check):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    cc, ext = CORPORA / "check", CORPORA / "profile"
    eval_cands = CORPORA / "eval_level1"
    for name, (kb, specs) in GPU_BATCH.items():
        shutil.copy(KERNELBENCH / kb, probs / f"{name}.py")
        (cands / name).mkdir()
        for i, spec in enumerate(specs):
            kind, _, rest = spec.partition(":")
            if kind == "check":
                text = (cc / f"{rest}.py").read_text()
            elif kind == "ext":
                text = (ext / "ext.py").read_text() + (ext / f"{rest}.py").read_text()
            else:
                text = _elementwise_candidate(spec)
            (cands / name / f"c{i}_{'ew' if kind == 'ew' else rest}.py").write_text(text)
    if eval_cands.is_dir() and os.environ.get("BENCH_EVAL_CANDIDATES", "1") != "0":  # the level-1 eval corpus (named after their KernelBench file) join the batch
        for p in sorted(eval_cands.glob("*.py")):
            kb = KERNELBENCH / "level1" / p.name
            if kb.exists() and not (probs / f"L1_{p.name}").exists():
                shutil.copy(kb, probs / f"L1_{p.name}")
                (cands / f"L1_{p.stem}").mkdir()
                shutil.copy(p, cands / f"L1_{p.stem}" / f"eval_{p.name}")
    # compile_and_check benchmark (same layout as tools/gpu/check_gpu.sh prepare)
    for name, kb in (("relu", "level1/19_ReLU.py"), ("matmul", "level1/1_Square_matrix_multiplication_.py"),
                     ("gemm_fused", "level2/12_Gemm_Multiply_LeakyReLU.py")):
        shutil.copy(KERNELBENCH / kb, check / f"{name}_ref.py")
        for c in ("cand", "cand2"):
            shutil.copy(cc / f"{name}_{c}.py", check / f"{name}_{c}.py")
    n = sum(1 for _ in cands.rglob("*.py"))
    print(f"prepared {sum(1 for _ in probs.glob('*.py'))} problems, {n} batch candidates, 3 check problems in {GPU_DIR}")


def gpu_problems() -> dict[str, Path]:
    if not (GPU_DIR / "batch").is_dir():
        raise SystemExit(f"{GPU_DIR} is missing: run `python tools/bench_suite.py --gpu --prepare` where KernelBench "
                         "is and carry .gpu")
    return {"check": GPU_DIR / "check", "batch": GPU_DIR / "batch", "batch_candidates": GPU_DIR / "batch_candidates",
            "repeat_pairs": [(GPU_DIR / "check" / "relu_ref.py", GPU_DIR / "check" / "relu_cand.py")]}


# ------------------------------------------------------------------ parts


def part_machine(ctx) -> dict:
    import importlib.metadata as md

    def version(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    info = {"date": dt.datetime.now().isoformat(timespec="seconds"), "platform": platform.platform(),
            "python": platform.python_version(), "cores": os.cpu_count(),
            "loadavg_at_start": list(os.getloadavg()),
            "versions": {p: version(p) for p in ("stitch-mcp", "torch", "mcp", "pydantic", "ray", "chromadb",
                                                 "nvidia-ml-py", "triton")}}
    try:
        info["cpu_model"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                                 if line.startswith("model name"))
    except (OSError, StopIteration):
        info["cpu_model"] = platform.processor()
    try:
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1)
    except (ValueError, OSError):
        pass
    import torch

    info["torch_cuda"] = torch.version.cuda
    info["cuda_available"] = torch.cuda.is_available()
    if shutil.which("nvidia-smi"):
        info["gpus"] = sh(["nvidia-smi", "--query-gpu=index,name,memory.total,driver_version",
                           "--format=csv,noheader"]).splitlines()
    info["nvcc"] = sh(["nvcc", "--version"]).splitlines()[-1] if shutil.which("nvcc") else None
    info["ncu"] = sh(["ncu", "--version"]).splitlines()[-1] if shutil.which("ncu") else None
    info["git_commit"] = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    info["git_dirty"] = bool(sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"]))
    info["device"] = (info.get("gpus") or ["CPU only: " + info["cpu_model"]])[0]
    return info


def part_handshake(ctx, runs: int = 7) -> dict:
    import anyio
    from bench_handshake import one_handshake

    anyio.run(one_handshake)  # warm page cache and .pyc, as a second start would be
    times = [anyio.run(one_handshake) for _ in range(runs)]
    return {"runs": runs, "seconds": stats(times), "target_s": 1.0}


def part_check(ctx) -> dict:
    out = ctx["work"] / "check.json"
    cmd = [sys.executable, str(TOOLS / "bench_check.py"), "--dir", str(ctx["problems"]["check"]), "--json", str(out)]
    if not ctx["gpu"]:
        cmd.append("--no-compile")  # torch.compile's CPU baseline is a C++ build per task: not what this measures
    run_dir = Path(tempfile.mkdtemp(prefix="bench-check-", dir=ctx["work"]))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=child_env(STITCH_DATA_DIR=str(run_dir / "data"),
                                             STITCH_ALLOWED_ROOTS=os.pathsep.join([str(ROOT), str(ctx["work"])])),
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_check failed: {proc.stderr[-2000:]}")
    rows = json.loads(out.read_text())
    return {"wall_s": round(time.monotonic() - t0, 1), "rows": rows, "table": proc.stdout,
            "compare_compile": ctx["gpu"]}


def part_repeat(ctx, calls: int = 5) -> dict:
    """Each pair's candidate `calls` times; the first pair's figures at the top level (as before
    there were several pairs), the others under `others`."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(ctx["busy"])]
    try:  # a loaded host: the checks run beside `--busy` processes that never stop computing
        pairs = [_repeat_pair(ctx, str(ref), str(cand), calls) for ref, cand in ctx["problems"]["repeat_pairs"]]
    finally:
        for proc in busy:
            proc.kill()
    return {**pairs[0], "others": pairs[1:]}


def _repeat_pair(ctx, ref: str, cand: str, calls: int) -> dict:
    from stitch_mcp.check import compile_and_check
    from stitch_mcp.config import configure

    rows = []
    for i in range(calls):
        # a fresh workspace: eager re-timed too
        configure(data_dir=str(ctx["work"] / f"repeat-data-{Path(cand).stem}-{i}"))
        r = compile_and_check(reference=ref, candidate=cand, timing=True, compare_compile=False)
        rows.append({"verdict": r.verdict, "speedup_vs_eager": r.speedup_vs_eager, **_host_state(ctx),
                     "candidate_ms": r.timing.candidate.median_ms if r.timing.candidate else None,
                     "candidate_cv": r.timing.candidate.cv if r.timing.candidate else None,
                     "eager_ms": r.timing.eager.median_ms if r.timing.eager else None,
                     "method": r.timing.method, "device": r.device, "stage_seconds": r.stage_seconds})
        log(f"repeat {Path(cand).stem} {i + 1}/{calls}: {r.verdict} speedup {r.speedup_vs_eager}")
    out = {"candidate": Path(cand).name, "reference": Path(ref).name, "calls": rows, "busy_loops": ctx["busy"],
           "speedup": stats([r["speedup_vs_eager"] for r in rows]),
           "candidate_ms": stats([r["candidate_ms"] for r in rows]),
           "eager_ms": stats([r["eager_ms"] for r in rows])}
    if ctx["gpu"]:
        configure(data_dir=str(ctx["work"] / f"repeat-data-{Path(cand).stem}-0"))
        out["ncu"] = _ncu_agreement(ref, cand, out["candidate_ms"].get("median"))
    else:
        out["host_memory_us"] = stats([r["host_memory_us"] for r in rows])
        out["host_compute_us"] = stats([r["host_compute_us"] for r in rows])
    configure()
    return out


HOST_SAMPLE_S = 0.5  # per core, after each check


def _host_state(ctx) -> dict:
    """On a CPU, how fast this host ran memory-bound and compute-bound work just after a check
    (tools/host_noise.py, HOST_SAMPLE_S on each core, the slower core's): a C++ loop against eager's
    relu gets a speedup that moves with the host's memory speed, which moved 1.35x within a minute on
    a quiet 2-vCPU guest (2026-11-28), so each repeat row says how far the host itself moved."""
    if ctx["gpu"]:
        return {}
    from host_noise import sample

    windows = [sample(HOST_SAMPLE_S, HOST_SAMPLE_S, core, echo=False)[0] for core in sorted(os.sched_getaffinity(0))]
    return {"host_memory_us": max(w["memory_us"] for w in windows),
            "host_compute_us": max(w["compute_us"] for w in windows)}


def _ncu_agreement(ref: str, cand: str, reported_ms: float | None) -> dict:
    from stitch_mcp.profiling.kernel import profile_kernel

    try:
        p = profile_kernel(reference=ref, candidate=cand, sections="quick", launch_count=5)
    except Exception as exc:  # noqa: BLE001 - recorded in the report
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}
    kernels = [{"name": k.name, "launches": k.launches, "duration_us": k.duration_us} for k in p.kernels]
    per_call_us = sum((k.duration_us or 0.0) for k in p.kernels)  # each kernel's mean duration, once per call
    ratio = (reported_ms * 1000 / per_call_us) if reported_ms and per_call_us else None
    return {"kernels": kernels, "ncu_kernel_time_per_call_us": round(per_call_us, 3),
            "reported_median_us": round(reported_ms * 1000, 3) if reported_ms else None,
            "reported_over_ncu": round(ratio, 4) if ratio else None}


def part_search(ctx) -> dict:
    out = ctx["work"] / "search.json"
    index = Path(tempfile.mkdtemp(prefix="bench-search-", dir=ctx["work"]))
    proc = subprocess.run([sys.executable, str(TOOLS / "bench_search.py"), "--index-dir", str(index), "--json",
                           str(out)], env=child_env(), capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_search failed: {proc.stderr[-2000:]}")
    shutil.rmtree(index, ignore_errors=True)
    return {**json.loads(out.read_text()), "text": proc.stdout}


def _eval_pass(ctx, label: str, cache: Path, gpus: str | None, jobs: int) -> dict:
    data = Path(tempfile.mkdtemp(prefix=f"bench-batch-{label}-", dir=ctx["work"]))
    rows_path = data / "rows.jsonl"
    env = child_env(STITCH_DATA_DIR=str(data / "data"), STITCH_CACHE_DIR=str(cache),
                    STITCH_ALLOWED_ROOTS=os.pathsep.join([str(ROOT), str(ctx["work"]), str(GPU_DIR)]))
    if gpus is not None:
        env["STITCH_GPUS"] = gpus
    cands = ctx["problems"]["batch_candidates"]
    if label != "cold" and ctx["batch_repeat"] > 1:  # built already: each candidate N times, for a longer run
        many = data / "candidates"
        for entry in cands.iterdir():  # NAME/*.py or NAME.py -> NAME/r<k>_*.py
            files = sorted(entry.glob("*.py")) if entry.is_dir() else [entry] if entry.suffix == ".py" else []
            for f in files:
                (many / (entry.name if entry.is_dir() else entry.stem)).mkdir(parents=True, exist_ok=True)
                for k in range(ctx["batch_repeat"]):
                    shutil.copy(f, many / (entry.name if entry.is_dir() else entry.stem) / f"r{k}_{f.name}")
        cands = many
    cmd = [sys.executable, "-m", "stitch_mcp", "eval", str(ctx["problems"]["batch"]),
           str(cands), "--out", str(rows_path), "--jobs", str(jobs)]
    log(f"batch pass {label}: {' '.join(cmd[3:])} (STITCH_GPUS={gpus!r}, jobs {jobs})")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"eval failed: {proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]
    n = len(rows)
    return {"label": label, "gpus": gpus, "jobs": jobs, "candidates": n, "wall_s": round(wall, 1),
            "per_hour": round(n / wall * 3600, 1), "verdicts": {v: sum(r["verdict"] == v for r in rows)
                                                               for v in ("pass", "fail", "error")},
            "summary": proc.stdout.strip(),
            "rows": [{k: r.get(k) for k in ("problem", "candidate", "verdict", "speedup_vs_eager", "seconds")}
                     | {"candidate": Path(r["candidate"]).name, "reason": (r.get("reasons") or [""])[0][:200]}
                     for r in rows]}


def _gpu_count() -> int:
    out = sh(["nvidia-smi", "-L"]) if shutil.which("nvidia-smi") else ""
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def part_batch(ctx, passes: list[str]) -> dict:
    """passes: cold, warm (CPU); cold, one, all (GPU). Later passes reuse the build cache of the first."""
    prev = ctx["parts"].get("batch", {}) if ctx["resume"] else {}
    res = {"passes": dict(prev.get("passes", {}))}
    cache = ctx["work"] / "batch-cache"
    if "cold" in passes:
        shutil.rmtree(cache, ignore_errors=True)
    n_gpu = _gpu_count() if ctx["gpu"] else 0
    res["gpus"] = n_gpu
    for p in passes:
        if p == "cold":
            res["passes"]["cold"] = _eval_pass(ctx, "cold", cache, None, max(2, 2 * n_gpu))
        elif p == "warm":
            res["passes"]["warm"] = _eval_pass(ctx, "warm", cache, None, 2)
        elif p == "one":
            res["passes"]["one"] = _eval_pass(ctx, "one", cache, "0", 2)
        elif p == "all":
            res["passes"]["all"] = _eval_pass(ctx, "all", cache, "", max(2, 2 * n_gpu))
    one, many = res["passes"].get("one"), res["passes"].get("all")
    if one and many and n_gpu:
        eff = many["per_hour"] / (one["per_hour"] * n_gpu)
        res["scaling"] = {"gpus": n_gpu, "one_gpu_per_hour": one["per_hour"], "all_gpus_per_hour": many["per_hour"],
                          "speedup": round(many["per_hour"] / one["per_hour"], 3), "efficiency": round(eff, 3),
                          "target_efficiency": 0.9, "met": eff >= 0.9}
    return res


# ------------------------------------------------------------------ report


def render(parts: dict, gpu: bool) -> str:
    m = parts.get("machine", {})
    L = [f"# stitch-mcp benchmarks: {'GPU' if gpu else 'CPU'} run, {m.get('date', '?')[:10]}", ""]
    L += ["## Machine", "", f"- device: {m.get('device')}", f"- cores: {m.get('cores')} ({m.get('cpu_model')}), "
          f"memory {m.get('memory_gib')} GiB, load average at start {m.get('loadavg_at_start')}",
          f"- {m.get('platform')}, Python {m.get('python')}, torch {m.get('versions', {}).get('torch')} "
          f"(CUDA {m.get('torch_cuda')}), mcp {m.get('versions', {}).get('mcp')}, "
          f"pydantic {m.get('versions', {}).get('pydantic')}, ray {m.get('versions', {}).get('ray')}"]
    if m.get("gpus"):
        L.append(f"- GPUs: {'; '.join(m['gpus'])}; nvcc: {m.get('nvcc')}; ncu: {m.get('ncu')}")
    L.append(f"- stitch-mcp commit {m.get('git_commit')}{' (with uncommitted changes)' if m.get('git_dirty') else ''}")
    L.append("")
    if errs := parts.get("_errors"):
        L += ["## Parts that failed", ""] + [f"- {k}: {v}" for k, v in errs.items()] + [""]
    h = parts.get("handshake")
    if h:
        s = h["seconds"]
        L += ["## Handshake", "", f"spawn `stitch-mcp serve` -> `tools/list` over stdio, {h['runs']} runs after one "
              f"warm-up: median **{s['median'] * 1000:.0f} ms** (min {s['min'] * 1000:.0f}, max {s['max'] * 1000:.0f}); "
              f"target <= {h['target_s'] * 1000:.0f} ms.", ""]
    c = parts.get("check")
    if c:
        L += ["## compile_and_check: cold / changed candidate / already built", "",
              "Fresh build cache and workspace. cold: first candidate of the task (nothing built, no baselines); "
              "changed: another candidate of the same task; warm: the first candidate again (built, baselines "
              f"cached). torch.compile baseline {'included' if c['compare_compile'] else 'not timed (CPU run)'}. "
              "Seconds:", "",
              "| task | run | verdict | wall | build | load | inputs | correctness | integrity | timing | speedup |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in c["rows"]:
            s = r["stage_seconds"]
            L.append(f"| {r['problem']} | {r['run']} | {r['verdict']} | {r['wall_s']:.1f} | {s.get('build', 0):.1f} | "
                     f"{s.get('load', 0):.2f} | {s.get('inputs', 0):.2f} | {s.get('correctness', 0):.2f} | "
                     f"{s.get('integrity', 0):.2f} | {s.get('timing', 0):.2f} | "
                     f"{r['speedup_vs_eager'] if r['speedup_vs_eager'] is not None else '-'} |")
        L.append("")
    if parts.get("repeat"):
        L += ["## Timing repeatability", ""]
    for r in [parts["repeat"], *parts["repeat"].get("others", [])] if parts.get("repeat") else []:
        sp, cm, em = r["speedup"], r["candidate_ms"], r["eager_ms"]
        L += [f"{r['candidate']} against {r['reference']}, {len(r['calls'])} calls, each in a fresh workspace "
              f"(eager re-timed every call)" + (f", beside {r['busy_loops']} busy loops" if r.get("busy_loops") else "")
              + f"; method: {r['calls'][0]['method']}.", "",
              "| quantity | median | min | max | max/min | CV |", "|---|---:|---:|---:|---:|---:|"]
        for name, s in (("speedup vs eager", sp), ("candidate ms", cm), ("eager ms", em),
                        ("host: memory-bound call us (after each check)", r.get("host_memory_us")),
                        ("host: compute-bound call us (after each check)", r.get("host_compute_us"))):
            if s:
                L.append(f"| {name} | {s['median']:.4g} | {s['min']:.4g} | {s['max']:.4g} | {s['spread']} | {s['cv']} |")
        if r.get("ncu"):
            n = r["ncu"]
            if n.get("error"):
                L.append(f"\nNsight Compute comparison failed: {n['error']}")
            else:
                L.append(f"\nNsight Compute: kernel time per call {n['ncu_kernel_time_per_call_us']} us "
                         f"(gpu__time_duration) vs reported median {n['reported_median_us']} us: "
                         f"reported/ncu = **{n['reported_over_ncu']}** (the reported time includes launch overhead "
                         "and, for a multi-kernel candidate, the gaps between kernels).")
        L.append("")
    s = parts.get("search")
    if s:
        f = s.get("fused") or {}
        L += ["## search_cuda_docs", "", f"Index of {s.get('chunks')} chunks ({s.get('by_kind')}), mode {s.get('mode')}: "
              f"fresh build {s.get('build_s')} s, rebuild with nothing changed {s.get('rebuild_unchanged_s')} s; "
              f"cold first query in a new process {s.get('cold_first_query_s')} s (imports {s.get('cold_import_s')} s); "
              f"warm query p50 **{s.get('warm_p50_ms')} ms**, p95 {s.get('warm_p95_ms')} ms; fused hit@5 "
              f"{f.get('hit@k')}, MRR {f.get('mrr')} over {f.get('n')} queries "
              f"({len(s.get('queries_skipped') or [])} skipped: their documents are not on this machine).", ""]
    b = parts.get("batch")
    if b:
        unit = "GPU-hour" if gpu else "hour (the CPU is the device)"
        L += ["## Batch throughput", "", f"`stitch-mcp eval` over the batch, candidates per {unit}:", "",
              "| pass | STITCH_GPUS | jobs | candidates | pass/fail/error | wall s | per hour |",
              "|---|---|---:|---:|---|---:|---:|"]
        for p in b["passes"].values():
            v = p["verdicts"]
            L.append(f"| {p['label']} | {p['gpus'] if p['gpus'] is not None else '(all)'} | {p['jobs']} | "
                     f"{p['candidates']} | {v['pass']}/{v['fail']}/{v['error']} | {p['wall_s']} | **{p['per_hour']}** |")
        if sc := b.get("scaling"):
            L += ["", f"Scaling: {sc['gpus']} GPUs give {sc['all_gpus_per_hour']} candidates/hour against "
                  f"{sc['one_gpu_per_hour']} on one: x{sc['speedup']}, efficiency **{sc['efficiency']}** "
                  f"(target >= {sc['target_efficiency']}: {'met' if sc['met'] else 'NOT met'})."]
        elif not gpu:
            L += ["", "Scaling over GPUs needs a GPU machine (tools/gpu/bench_gpu.sh)."]
        first = next(iter(b["passes"].values()))
        L += ["", "Per candidate (first pass):", "", "| problem | candidate | verdict | speedup | first reason |",
              "|---|---|---|---:|---|"]
        for row in sorted(first["rows"], key=lambda x: (x["problem"], x["candidate"])):
            L.append(f"| {row['problem']} | {row['candidate']} | {row['verdict']} | {row['speedup_vs_eager'] or '-'} | "
                     f"{row['reason'].replace('|', '/')[:120]} |")
        later = [(p["label"], row) for p in list(b["passes"].values())[1:] for row in p["rows"] if row["verdict"] != "pass"]
        if later:
            L += ["", "Did not pass in a later pass:", "", "| pass | problem | candidate | verdict | first reason |",
                  "|---|---|---|---|---|"]
            L += [f"| {label} | {row['problem']} | {row['candidate']} | {row['verdict']} | "
                  f"{row['reason'].replace('|', '/')[:160]} |" for label, row in later]
        L.append("")
    if not gpu:
        L += ["## Notes", "", "- CPU run: timings are the rooms' CPU on one core (each room's cgroup, read by the judge) "
              "where the host gives cpusets, else host `perf_counter` on a shared machine (the timing method is in each "
              "repeat row); speedups compare small C++ or PyTorch candidates with ATen on tiny inputs, so they measure the "
              "harness, not kernels. `torch.utils.cpp_extension` JIT-builds C++ without an `-O` flag unless the "
              "candidate passes `extra_cflags`, hence the C++ ReLU's ~0.1x (one core, CPU clock).",
              "- GPU figures (ncu agreement, level-1/level-2 batch, several-GPU scaling): `tools/gpu/bench_gpu.sh`.", ""]
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", action="store_true", help="GPU run (KernelBench problems from .gpu/bench)")
    ap.add_argument("--prepare", action="store_true", help="with --gpu: prepare .gpu/bench and exit")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks"))
    ap.add_argument("--parts", default=",".join(ALL_PARTS), help=f"comma-separated: {','.join(ALL_PARTS)}")
    ap.add_argument("--batch-passes", default=None, help="CPU default cold,warm; GPU default cold,one,all")
    ap.add_argument("--work", default=None, help="folder for part results and caches (kept between commands)")
    ap.add_argument("--resume", action="store_true", help="keep part results already in --work")
    ap.add_argument("--batch-repeat", type=int, default=1,
                    help="check each batch candidate N times in the passes after cold (a longer steady run)")
    ap.add_argument("--name", default=None, help="report file name without extension (default cpu|gpu-DATE)")
    ap.add_argument("--busy", type=int, default=0, help="the repeat part runs beside this many busy loops (a loaded host)")
    args = ap.parse_args()
    if args.prepare:
        prepare_gpu()
        return 0
    kind = "gpu" if args.gpu else "cpu"
    work = Path(args.work or ROOT / ".gpu" / "bench-work" / kind).resolve()
    if not args.resume and work.exists():
        shutil.rmtree(work)
    (work / "parts").mkdir(parents=True, exist_ok=True)
    # isolated workspace and caches for everything in this process (and children that inherit them)
    os.environ["STITCH_DATA_DIR"] = str(work / "data")
    os.environ["STITCH_CACHE_DIR"] = str(work / "cache")
    os.environ["STITCH_ALLOWED_ROOTS"] = os.pathsep.join([str(ROOT), str(work), tempfile.gettempdir()])
    parts = {p.stem: json.loads(p.read_text()) for p in (work / "parts").glob("*.json")}
    ctx = {"gpu": args.gpu, "work": work, "parts": parts, "resume": args.resume, "batch_repeat": args.batch_repeat,
           "busy": args.busy,
           "problems": gpu_problems() if args.gpu else cpu_problems(work)}
    passes = (args.batch_passes or ("cold,one,all" if args.gpu else "cold,warm")).split(",")
    runners = {"machine": part_machine, "handshake": part_handshake, "check": part_check, "repeat": part_repeat,
               "search": part_search, "batch": lambda c: part_batch(c, passes)}
    errors = parts.pop("_errors", {})
    for name in [p for p in args.parts.split(",") if p]:
        log(f"part {name}")
        t0 = time.monotonic()
        try:
            parts[name] = runners[name](ctx)
            errors.pop(name, None)
        except Exception as exc:  # noqa: BLE001 - one failed part must not lose the others
            errors[name] = f"{type(exc).__name__}: {exc}"[:1500]
            log(f"part {name} FAILED: {errors[name]}")
            continue
        parts[name]["part_seconds"] = round(time.monotonic() - t0, 1)
        (work / "parts" / f"{name}.json").write_text(json.dumps(parts[name], indent=1, default=str))
        log(f"part {name} done in {parts[name]['part_seconds']} s")
    if "machine" not in parts:
        parts["machine"] = part_machine(ctx)
    if errors:
        parts["_errors"] = errors
        (work / "parts" / "_errors.json").write_text(json.dumps(errors, indent=1))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or f"{kind}-{dt.date.today().isoformat()}"
    (out / f"{name}.json").write_text(json.dumps(parts, indent=1, default=str))
    (out / f"{name}.md").write_text(render(parts, args.gpu) + "\n")
    print(render(parts, args.gpu))
    log(f"wrote {out / name}.md and .json")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
