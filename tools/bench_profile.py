"""Benchmark (not a timed test) of profile_reference and profile_kernel on KernelBench problems.

    python tools/bench_profile.py --dir .gpu/profile --out OUT

Expects l{1,2,3}_ref.py and l{1,2,3}_cand.py in --dir (tools/gpu/profile_gpu.sh prepare writes
them). For each level: profile_reference (torch backend), compile_and_check without timing (the
build is its cost, not the profiler's; profile_kernel reuses it as in the loop), then profile_kernel in
`quick` mode; on level 1 also `source`, and the bad-input cases (filter matching nothing, a
crashing candidate); with --nsys also profile_reference under Nsight Systems (nsys on PATH).
Prints digest heads, image sizes and timings; writes bench.json and the summaries to --out.
Targets: profile_kernel quick on a single-kernel candidate (level 1) <= 20 s; profile_reference
(torch) on level 3 <= 20 s.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def head(text: str, n: int = 18) -> str:
    return "\n".join(text.splitlines()[:n])


def image_size(uri: str | None) -> int | None:
    from stitch_mcp.config import get_settings

    if not uri:
        return None
    p = get_settings().artifacts_dir / uri.split("/")[-1]
    return p.stat().st_size if p.exists() else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=".gpu/profile")
    ap.add_argument("--out", default="/tmp/bench_profile")
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--nsys", action="store_true", help="also profile each reference with backend nsys")
    args = ap.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from stitch_mcp.check import compile_and_check
    from stitch_mcp.errors import UserError
    from stitch_mcp.profiling.kernel import profile_kernel
    from stitch_mcp.profiling.reference import profile_reference

    d, out = Path(args.dir).resolve(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []

    def record(name, fn):
        t0 = time.monotonic()
        try:
            r = fn()
            dt = time.monotonic() - t0
            row = {"case": name, "seconds": round(dt, 2), "ok": True, "image_bytes": image_size(r.image_uri),
                   "summary_chars": len(r.summary), "backend": getattr(r, "backend", None),
                   "notes": list(getattr(r, "notes", []))[:5]}
            print(f"\n=== {name}: {dt:.1f} s, image {row['image_bytes']} bytes, summary {len(r.summary)} chars"
                  + (f", backend {row['backend']}" if row["backend"] else ""))
            print(head(r.summary, 30 if "kernel" in name else 24))
            (out / f"{name}.txt").write_text(r.summary)
            (out / f"{name}.json").write_text(r.model_dump_json(indent=1))
        except UserError as exc:
            dt = time.monotonic() - t0
            row = {"case": name, "seconds": round(dt, 2), "ok": False, "error": str(exc)[:600]}
            print(f"\n=== {name}: UserError after {dt:.1f} s:\n{str(exc)[:600]}")
        results.append(row)
        sys.stdout.flush()
        return row

    for level in [int(x) for x in args.levels.split(",")]:
        ref, cand = d / f"l{level}_ref.py", d / f"l{level}_cand.py"
        record(f"L{level}_profile_reference_torch", lambda: profile_reference(reference=str(ref), backend="torch",
                                                                             iterations=5))
        if args.nsys:
            record(f"L{level}_profile_reference_nsys",
                   lambda: profile_reference(reference=str(ref), backend="nsys", iterations=5))
        t0 = time.monotonic()  # as a Coder does: profile_kernel reuses what compile_and_check built
        checked = compile_and_check(candidate=str(cand), reference=str(ref), timing=False)
        print(f"\n--- L{level} compile_and_check (build, no timing): {time.monotonic() - t0:.1f} s, "
              f"{checked.verdict}")
        results.append({"case": f"L{level}_compile_and_check", "seconds": round(time.monotonic() - t0, 2),
                        "ok": checked.verdict == "pass"})
        record(f"L{level}_profile_kernel_quick", lambda: profile_kernel(candidate=str(cand), reference=str(ref),
                                                                         sections="quick"))
        if level == 1:
            record("L1_profile_kernel_source", lambda: profile_kernel(candidate=str(cand), reference=str(ref),
                                                                      sections="source", launch_count=1))
            record("L1_bad_filter", lambda: profile_kernel(candidate=str(cand), reference=str(ref),
                                                           kernel_filter="no_such_kernel_xyz"))
            crash = cand.read_text().replace("return ext.relu_f4(x.contiguous())",
                                             "raise RuntimeError('candidate crashed on purpose')")
            record("L1_crashing_candidate", lambda: profile_kernel(candidate=crash, reference=str(ref)))
    (out / "bench.json").write_text(json.dumps(results, indent=1))
    print("\n=== timings")
    for r in results:
        print(f"  {r['case']:40s} {r['seconds']:7.1f} s  {'ok' if r['ok'] else 'error'}"
              + (f"  image {r.get('image_bytes')} B" if r.get("image_bytes") else ""))
    targets = {"L1_profile_kernel_quick": 20, "L3_profile_reference_torch": 20}
    for case, limit in targets.items():
        r = next((x for x in results if x["case"] == case), None)
        if r:
            print(f"  target {case} <= {limit} s: {'met' if r['ok'] and r['seconds'] <= limit else 'MISSED'} "
                  f"({r['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
