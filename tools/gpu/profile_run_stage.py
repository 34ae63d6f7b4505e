"""Where compile_and_check's run stage spends its time on an already-built candidate: the stage
(correctness trials, integrity checks, timing) run in this process under torch.profiler, the
way a worker runs it, and the top CPU-side and CUDA-side ops printed. Not a test.

    python tools/gpu/profile_run_stage.py .gpu/check/relu_ref.py .gpu/check/relu_cand.py [--no-timing]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("reference", type=Path)
    ap.add_argument("candidate", type=Path)
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--rows", type=int, default=25)
    args = ap.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="profile-run-"))
    os.environ.setdefault("STITCH_DATA_DIR", str(run_dir / "data"))
    os.environ.setdefault("STITCH_CACHE_DIR", str(run_dir / "cache"))
    os.environ.setdefault("STITCH_ALLOWED_ROOTS", os.pathsep.join([str(ROOT), tempfile.gettempdir(),
                                                                    str(args.reference.resolve().parent)]))
    from stitch_mcp.check import compile_and_check, run_spec
    from stitch_mcp.config import get_settings

    t0 = time.monotonic()  # builds the candidate (and its baselines) the normal way
    r = compile_and_check(reference=str(args.reference), candidate=str(args.candidate), timing=True,
                          compare_compile=False)
    print(f"first check: {r.verdict} in {time.monotonic() - t0:.1f} s, stages {r.stage_seconds}", flush=True)
    settings = get_settings()
    build_root = Path(settings.build_dir).expanduser()
    spec = run_spec(args.reference.read_text(), args.candidate.read_text(), build_root, settings,
                    trials=settings.trials, timing=not args.no_timing, compare_compile=False, timing_seeds=[1, 2])
    import torch
    from torch.profiler import ProfilerActivity, profile

    from stitch_mcp.judge import run_stage

    work = run_dir / "run"
    work.mkdir()
    os.chdir(work)
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:  # the CUDA context, as a warm worker has it (a second run_stage here would re-import the candidate)
        torch.zeros(1, device="cuda")
    t0 = time.monotonic()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        res = run_stage(spec)
        sync()
    print(f"profiled run stage: {time.monotonic() - t0:.2f} s, stages {res['stage_seconds']}, "
          f"error {res.get('error')}", flush=True)
    table = prof.key_averages()
    print(table.table(sort_by="cpu_time_total", row_limit=args.rows, max_name_column_width=50))
    if cuda:
        print(table.table(sort_by="self_cuda_time_total", row_limit=args.rows, max_name_column_width=50))
    return 0


if __name__ == "__main__":
    sys.exit(main())
