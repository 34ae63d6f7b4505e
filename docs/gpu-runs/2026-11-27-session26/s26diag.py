"""Diagnostic: atk_busy_beside on the GPU matmul, forged and not, several times; the batch fields."""
import json, sys, time
from pathlib import Path
from stitch_mcp.check import compile_and_check
from stitch_mcp.config import configure
P = Path("tests/programs"); A = P / "attacks"
def src(**fill):
    t = (A / "atk_busy_beside.py").read_text()
    for k, v in fill.items(): t = t.replace(f"@{k}@", v)
    return t
runs = [("forged0.5-duty0.3", dict(forged="0.5", threads="1", duty="0.3", spin_us="1000"))] * 4 + \
       [("honest-duty0.3", dict(forged="1.0", threads="1", duty="0.3", spin_us="1000"))] * 3 + \
       [("honest-noduty", dict(forged="1.0", threads="1", duty="0.0001", spin_us="1")) ] * 2
for i, (name, fill) in enumerate(runs):
    configure(data_dir=f"/tmp/s26diag-data-{i}")
    t0 = time.time()
    r = compile_and_check(reference=str(A / "gpu_ref_mm.py"), candidate=src(**fill), timing=True, compare_compile=False)
    b = r.timing.batch.model_dump() if r.timing and r.timing.batch else {}
    keep = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in b.items() if k in (
        "calls", "candidate_ms", "reference_ms", "copy_ms", "copy_spread_ms", "reference_alone_ms", "copy_alone_ms",
        "speedup", "speedup_beside", "whole_ms", "busy_host", "unverified", "note", "idle_wall_ms")}
    print(name, r.verdict, r.speedup_vs_eager, "cand %.4f eager %.4f" % (r.timing.candidate.median_ms, r.timing.eager.median_ms),
          "%.0fs" % (time.time() - t0), json.dumps(keep), flush=True)
