"""The honest 2x matmul (gpu_cand_mm against gpu_ref_mm_twice) checked N times in fresh data dirs:
speedup, whether the batches' readings disagreed (lowered), and the lanes."""
import sys, time
from pathlib import Path
from stitch_mcp.config import configure
from stitch_mcp.check import compile_and_check
P = Path("tests/programs")
for i in range(int(sys.argv[1])):
    configure(data_dir=f"/tmp/s29mm-{i}-{time.time()}")
    r = compile_and_check(reference=str(P / "gpu_ref_mm_twice.py"), candidate=(P / "gpu_cand_mm.py").read_text(),
                          timing=True, compare_compile=False)
    b = r.timing.batch
    print(i, r.verdict, "speedup", r.speedup_vs_eager, "lowered", b and b.lowered, "unverified", b and b.unverified,
          "batch", b and (round(b.candidate_ms, 4), round(b.reference_ms, 4), round(b.copy_ms, 4),
                          b.reference_alone_ms and round(b.reference_alone_ms, 4), b.copy_alone_ms and round(b.copy_alone_ms, 4),
                          b.speedup and round(b.speedup, 3), b.speedup_beside and round(b.speedup_beside, 3), b.busy_host),
          "|", (b.note[:160] if b else ""), flush=True)
