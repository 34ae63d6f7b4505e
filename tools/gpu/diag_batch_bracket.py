"""The judge's timing brackets on a GPU: honest and forged few-microsecond kernels, several times
each, one line per check (verdict, times, the batch bracket's figures, findings).

    python3 tools/gpu/diag_batch_bracket.py [REPS]     # on the GPU machine, from the repository root

An honest kernel must never get `timing_contradicted`; the forged one (its room's CUDA events
report 21% of the real time) always must. Runs of 2026-11-24: docs/gpu-runs/2026-11-24-session6.
"""
import sys
import time
from pathlib import Path

from stitch_mcp.check import compile_and_check

P = Path(__file__).resolve().parents[2] / "tests" / "programs"
cases = [("honest_torch", "attacks/gpu_ref_small_relu", "cand_relu_torch"),
         ("honest_cuda", "attacks/gpu_ref_small_relu", "gpu_cand_relu"),
         ("forged_events", "attacks/gpu_ref_small_relu", "attacks/gpu_atk_forge_events"),
         ("honest_cuda_big", "gpu_ref_relu", "gpu_cand_relu")]
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
for rep in range(reps):
    for name, ref, cand in cases:
        if name.endswith("big") and rep:
            continue
        t0 = time.time()
        r = compile_and_check(reference=str(P / f"{ref}.py"), candidate=(P / f"{cand}.py").read_text(),
                              timing=True, compare_compile=False)
        t = r.timing
        print(f"{name} rep{rep} {r.verdict} {time.time() - t0:.1f}s cand={t and t.candidate and t.candidate.median_ms:.5} "
              f"eager={t and t.eager and t.eager.median_ms:.5} x{r.speedup_vs_eager} batch={t and t.batch} "
              f"findings={[f.code + ': ' + f.message[:300] for f in r.integrity.findings]}", flush=True)
