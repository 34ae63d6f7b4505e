"""Where profile_kernel's time goes on a single-kernel candidate (issue 16: 72-89 s, target <= 20 s).
Not a test: a measurement to run on a GPU host.

    python tools/gpu/profile_kernel_phases.py [REFERENCE CANDIDATE] [--out OUT.json]

Default: the ReLU task of tests/rubric_cases (6.4 GB in and out: ncu's per-pass save/restore of the
output is part of the picture). In order, each timed:

1. compile_and_check (builds the candidate into the build cache, as the loop does first);
2. profile_kernel `quick` twice (cold, then warm) with its own "time:" note (ncu runs, candidate
   import inside them, report read);
3. the profile driver alone, without ncu (torch import, reference and candidate import, model,
   inputs, warm-up and profiled forward);
4. the same driver under ncu with: no sections; SpeedOfLight only; the quick sections without the
   FLOP counters; the quick sections with them (what profile_kernel runs) - the differences are
   the cost of ncu's injection, of each replay pass, and of the extra metrics;
5. reading the report (ncu_report in a child, then the CSV page).

Prints one line per phase and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
CASES = ROOT / "tests" / "rubric_cases"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("reference", nargs="?", type=Path, default=CASES / "relu_reference.py")
    ap.add_argument("candidate", nargs="?", type=Path, default=CASES / "relu_improved.py")
    ap.add_argument("--out", type=Path, default=Path("/tmp/profile_kernel_phases.json"))
    args = ap.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="profile-phases-"))
    os.environ.setdefault("STITCH_DATA_DIR", str(run_dir / "data"))
    os.environ.setdefault("STITCH_CACHE_DIR", str(run_dir / "cache"))
    os.environ.setdefault("STITCH_ALLOWED_ROOTS", os.pathsep.join(
        [str(ROOT), tempfile.gettempdir(), str(args.reference.resolve().parent), str(args.candidate.resolve().parent)]))
    from stitch_mcp.check import compile_and_check
    from stitch_mcp.config import get_settings
    from stitch_mcp.profiling import ncu as N
    from stitch_mcp.profiling.kernel import profile_kernel, read_report
    from stitch_mcp.profiling.runner import python_env, python_exe, run_group

    rows: list[dict] = []

    def timed(name: str, fn):
        t0 = time.monotonic()
        out = fn()
        row = {"phase": name, "seconds": round(time.monotonic() - t0, 2)}
        rows.append(row)
        print(f"{row['seconds']:8.2f} s  {name}", flush=True)
        return out

    check = timed("compile_and_check (build + correctness + timing)",
                  lambda: compile_and_check(reference=str(args.reference), candidate=str(args.candidate)))
    print(f"           verdict {check.verdict}, stages {check.stage_seconds}")
    for label in ("cold", "warm"):
        prof = timed(f"profile_kernel quick ({label})",
                     lambda: profile_kernel(candidate_id=check.candidate_id, sections="quick"))
        print("           " + " | ".join(n for n in prof.notes if n.startswith(("time:", "profiled in"))))

    settings = get_settings()
    ncu = N.find_ncu()
    work = run_dir / "driver"
    work.mkdir()
    (work / "reference.py").write_text(args.reference.read_text())
    (work / "candidate.py").write_text(args.candidate.read_text())
    driver = [python_exe(), "-m", "stitch_mcp.profiling.driver", "ncu", "--ref", str(work / "reference.py"),
              "--cand", str(work / "candidate.py"), "--out", str(work), "--iters", "1", "--warmup", "1",
              "--build-root", str(settings.build_dir)]

    def run(cmd: list[str]):
        res = run_group(cmd, timeout_s=600, cwd=work, env=python_env(), log_path=work / "run.log")
        if res.returncode != 0:
            print(res.output[-2000:])
        return res

    timed("driver alone (no ncu)", lambda: run(driver))
    timed("ncu --version", lambda: run([ncu, "--version"]))
    variants = {
        "ncu, no sections (injection and one launch)": ([], False),
        "ncu, SpeedOfLight only": (["--section", "SpeedOfLight"], False),
        "ncu, quick sections, no FLOP counters": (None, False),
        "ncu, quick sections + FLOP counters (= profile_kernel)": (None, True),
    }
    for name, (sections, extras) in variants.items():
        cmd = N.ncu_command(ncu, "quick", work / "profile", [], kernel_filter=None, launch_skip=0, launch_count=1,
                            clock_control=settings.ncu_clock_control, extra_metrics=extras)
        if sections is not None:  # replace the quick sections
            keep, skip = [], False
            for part in cmd:
                if skip:
                    skip = False
                    continue
                if part == "--section":
                    skip = True
                    continue
                keep.append(part)
            cmd = keep[:-2] + sections + keep[-2:]  # before --launch-count N
            if not sections:
                cmd += ["--metrics", "gpu__time_duration.sum"]
        timed(name, lambda: run(cmd + driver))
    rep = next(iter(work.glob("profile*.ncu-rep")))
    timed("report read (ncu_report child, else CSV)", lambda: read_report(ncu, rep, work, 600, None))
    args.out.write_text(json.dumps({"device": check.device, "rows": rows}, indent=1))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
