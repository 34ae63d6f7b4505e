"""Where a candidate's kernel file spends its nvcc time: compile its `cuda.cu` the way load_inline
generates it, against each rung of stitch-mcp's kernel headers (ATen per-operator headers,
torch/types.h, the real torch/extension.h), and print nvcc's per-phase times (`nvcc --time`).
Not a test.

    python tools/gpu/nvcc_phases.py .gpu/check/matmul_cand.py [--arch 90]
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def cuda_sources(candidate: Path) -> list[str]:
    """The cuda_sources the candidate passes to load_inline (captured, nothing built)."""
    import torch.utils.cpp_extension as ce

    seen: list[str] = []

    def capture(*args, **kwargs):
        src = kwargs.get("cuda_sources", args[2] if len(args) > 2 else None)
        seen.extend([src] if isinstance(src, str) else list(src or []))
        raise SystemExit(0)

    ce.load_inline = capture
    try:
        exec(compile(candidate.read_text(), str(candidate), "exec"), {"__name__": "candidate"})
    except SystemExit:
        pass
    return seen


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("candidate", type=Path)
    ap.add_argument("--arch", default="90")
    args = ap.parse_args()
    import torch.utils.cpp_extension as ce

    from stitch_mcp.build.headers import kernel_header_rungs

    work = Path(tempfile.mkdtemp(prefix="nvcc-phases-"))
    sources = cuda_sources(args.candidate)
    cu = work / "cuda.cu"
    cu.write_text("\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", *sources]))
    incs = [f for p in [*ce.include_paths(), sysconfig.get_paths()["include"]]
            for f in ("-isystem", p)]
    base = ["nvcc", "-c", str(cu), "-std=c++17", f"-gencode=arch=compute_{args.arch},code=sm_{args.arch}",
            "--compiler-options", "-fPIC", "-DTORCH_EXTENSION_NAME=x", "-DTORCH_API_INCLUDE_EXTENSION_H",
            *ce.COMMON_NVCC_FLAGS, *incs]
    for i, (label, folder) in enumerate(reversed(kernel_header_rungs(work, sources))):
        extra = [f"-I{folder}"] if folder else []
        times = work / f"times-{i}.csv"
        t0 = time.monotonic()
        proc = subprocess.run([*base, *extra, "-o", str(work / "out.o"), "--time", str(times)],
                              capture_output=True, text=True)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            print(f"{label}: failed\n{proc.stderr[-2000:]}")
            continue
        rows = list(csv.reader(times.read_text().splitlines()))[1:]
        phases = ", ".join(f"{r[1].strip()} {float(r[6]) / 1000:.1f}" for r in rows if float(r[6]) >= 50)
        print(f"{label:<24} {wall:6.1f} s   ({phases})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
