"""Benchmark compile_and_check end to end (issue 3's performance targets). Not a test.

For each (reference, candidate, changed candidate) it runs, against an empty build cache and
workspace:
  cold     the first candidate of the task (nothing built, no baselines);
  changed  a changed candidate of the same task (the loop's common case: same binding, new kernel);
  warm     the first candidate again (already built, baselines cached);
and prints the wall time with its split into build, inputs, correctness, integrity and timing.

    python tools/bench_check.py                       # the problems under .gpu/check (see check_gpu.sh)
    python tools/bench_check.py --dir DIR --json out.json
    python tools/bench_check.py --timeline            # also each check's steps, seconds from its start
    python tools/bench_check.py --settle 3 --repeat 5 # 3 s between checks; the built candidate 5 more times

--settle waits before each check as a Coder does while it writes the next candidate: spare workers
and rooms started after the previous check are then ready, as they are in use. --repeat N checks the
already-built candidate N more times in the same workspace, as a Coder's loop does (each check
times eager again, beside the candidate), and prints the spread of its speedup (issue 15's target:
5 checks within 2% on a GPU).

A problem folder holds NAME_ref.py, NAME_cand.py and NAME_cand2.py.
KernelBench's own evaluator for comparison (H200): 52-134 s per candidate on level-1/2 tasks
(120 s for ReLU over 4096x393216 floats, 52 s for a 4096^2 matmul).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=str(ROOT / ".gpu" / "check"))
    ap.add_argument("--only", nargs="*", help="problem names to run")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    ap.add_argument("--keep-cache", action="store_true", help="reuse STITCH_CACHE_DIR instead of a fresh one")
    ap.add_argument("--timeline", action="store_true", help="print each check's progress steps with their times")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds to wait before each check")
    ap.add_argument("--repeat", type=int, default=0, help="check the built candidate this many more times")
    args = ap.parse_args()

    run_dir = Path(tempfile.mkdtemp(prefix="bench-check-"))
    os.environ.setdefault("STITCH_DATA_DIR", str(run_dir / "data"))
    if not args.keep_cache:
        os.environ["STITCH_CACHE_DIR"] = str(run_dir / "cache")
    os.environ.setdefault("STITCH_ALLOWED_ROOTS", os.pathsep.join([str(ROOT), tempfile.gettempdir(), args.dir]))
    sys.path.insert(0, str(ROOT))
    problems = sorted(p.name[:-len("_ref.py")] for p in Path(args.dir).glob("*_ref.py"))
    if args.only:
        problems = [p for p in problems if p in args.only]
    rows = []
    print(f"{'problem':<14} {'run':<8} {'verdict':<8} {'wall_s':>7} {'build':>7} {'ext':>6} {'load':>6} {'inputs':>7} "
          f"{'correct':>8} {'integr':>7} {'timing':>7}  speedup(eager/compile)", flush=True)
    for name in problems:
        d = Path(args.dir)
        labels = [f"repeat{i + 1}" for i in range(args.repeat)]
        runs = [("cold", "cand"), ("changed", "cand2"), ("warm", "cand")] + [(label, "cand") for label in labels]
        for label, cand in runs:
            path = d / f"{name}_{cand}.py"
            if not path.exists():
                continue
            time.sleep(args.settle)
            rows.append(_check_row(name, label, d / f"{name}_ref.py", path, args))
        _print_spread(name, [r for r in rows if r["problem"] == name and r["run"] in ("warm", *labels)])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def _check_row(name: str, label: str, ref: Path, path: Path, args) -> dict:
    """One compile_and_check, printed as a row (and its timeline), returned as a dict."""
    from stitch_mcp.check import compile_and_check

    t0, timeline = time.monotonic(), _timeline()
    r = compile_and_check(reference=str(ref), candidate=str(path), timing=True,
                          compare_compile=not args.no_compile, progress=timeline)
    wall = time.monotonic() - t0
    s = r.stage_seconds
    row = {"problem": name, "run": label, "verdict": r.verdict, "error_kind": r.error_kind, "wall_s": wall,
           "stage_seconds": s, "speedup_vs_eager": r.speedup_vs_eager,
           "speedup_vs_compile": r.speedup_vs_compile, "build_cached": r.build.cached,
           "candidate_ms": r.timing.candidate.median_ms if r.timing.candidate else None,
           "eager_ms": r.timing.eager.median_ms if r.timing.eager else None,
           "candidate_min_ms": r.timing.candidate.min_ms if r.timing.candidate else None,
           "eager_min_ms": r.timing.eager.min_ms if r.timing.eager else None,
           "compiled_ms": r.timing.compiled.median_ms if r.timing.compiled else None,
           "extension_seconds": sum(e.seconds for e in r.build.extensions),
           "kernel_headers": [e.kernel_header for e in r.build.extensions],
           "floor_fraction": r.timing.floor_fraction, "findings": [f.code for f in r.integrity.findings],
           "reasons": r.reasons[:2], "device": r.device, "timeline": timeline.steps,
           "batch": r.timing.batch.model_dump() if r.timing.batch else None}
    sp = f"{r.speedup_vs_eager or 0:.2f}/{r.speedup_vs_compile or 0:.2f}"
    print(f"{name:<14} {label:<8} {str(r.verdict):<8} {wall:7.1f} {s.get('build', 0):7.1f} "
          f"{row['extension_seconds']:6.1f} "
          f"{s.get('load', 0):6.2f} {s.get('inputs', 0):7.2f} {s.get('correctness', 0):8.2f} "
          f"{s.get('integrity', 0):7.2f} {s.get('timing', 0):7.2f}  {sp}"
          + (f"  [{r.error_kind}: {r.reasons[0][:120]}]" if r.verdict != "pass" else ""), flush=True)
    if args.timeline:
        print("    stages: " + " ".join(f"{k}={v}" for k, v in sorted(s.items())))
        for at, message in timeline.steps:
            print(f"    {at:7.3f}  {message}")
    return row


def _print_spread(name: str, rows: list[dict]) -> None:
    """The already-built candidate's speedup over its checks: median, max/min - 1."""
    speedups = [r["speedup_vs_eager"] for r in rows if r["speedup_vs_eager"]]
    if len(speedups) < 2:
        return
    print(f"{name:<14} spread   {len(speedups)} checks: speedup median {statistics.median(speedups):.4f}, "
          f"max/min - 1 = {max(speedups) / min(speedups) - 1:.2%}; candidate ms {_ms(rows, 'candidate_ms')}; "
          f"eager ms {_ms(rows, 'eager_ms')}", flush=True)


def _ms(rows: list[dict], key: str) -> str:
    return ", ".join(f"{r[key]:.4g}" if r[key] else "-" for r in rows)


def _timeline():
    from stitch_mcp.jobs import Progress

    class Timeline(Progress):
        """The check's progress messages, each with the seconds since the check began."""

        def __init__(self) -> None:
            super().__init__()
            self.t0, self.steps = time.monotonic(), []

        def announce(self) -> None:
            if not self.steps or self.steps[-1][1] != self.message:
                self.steps.append((round(time.monotonic() - self.t0, 3), self.message))

    return Timeline()


if __name__ == "__main__":
    sys.exit(main())
