"""Each pair a few times: what the judge's GPU batches said (stdout, one line per check)."""
import os, sys, time
from pathlib import Path
from stitch_mcp.check import compile_and_check
from stitch_mcp.config import configure

T = Path("tests/programs"); P = Path(".gpu/probe")
PAIRS = {"clamp": (T / "attacks/gpu_ref_small_relu.py", T / "cand_relu_torch.py"),
         "cuda_relu": (T / "attacks/gpu_ref_small_relu.py", T / "gpu_cand_relu.py"),
         "forge_small": (T / "attacks/gpu_ref_small_relu.py", T / "attacks/gpu_atk_forge_events.py"),
         "mm": (P / "ref_mm.py", P / "cand_mm.py"), "forge_mm": (P / "ref_mm.py", P / "forge_mm.py"),
         "forge_big": (P / "ref_big_relu.py", T / "attacks/gpu_atk_forge_events.py")}
reps = int(sys.argv[1]); names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(PAIRS)
for i in range(reps):
    for name in names:
        ref, cand = PAIRS[name]
        configure(data_dir=f"/tmp/probe-{name}-{i}-{os.getpid()}")
        t0 = time.time()
        r = compile_and_check(reference=str(ref), candidate=cand.read_text(), timing=True, compare_compile=False)
        t = r.timing
        b = t.batch if t else None
        codes = sorted(f.code for f in r.integrity.findings)
        bt = (f"R={b.reference_ms*1e3:.1f}us C={b.copy_ms*1e3:.1f}us B={b.candidate_ms*1e3:.1f}us "
              f"whole={(b.whole_ms or 0)*1e3:.1f}us k={b.calls} unverified={b.unverified} busy={b.busy_host} "
              f"host_bound={b.host_bound} idle={b.idle_cpu_ms:.0f}/{b.idle_wall_ms:.0f}ms room={b.room_ms} note={b.note[:90]!r}") if b else "no batches"
        print(f"{name} rep{i} {r.verdict} speedup={r.speedup_vs_eager} eager={t.eager.median_ms*1e3 if t and t.eager else None:.2f}us "
              f"cand={t.candidate.median_ms*1e3 if t and t.candidate else None:.2f}us findings={codes} | {bt} | "
              f"load={os.getloadavg()[0]:.1f} {time.time()-t0:.1f}s", flush=True)
