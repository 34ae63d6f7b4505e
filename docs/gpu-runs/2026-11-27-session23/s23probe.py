"""Each pair a few times: what the judge's GPU batches said (stdout, one line per check)."""
import os, sys, time
from pathlib import Path
from stitch_mcp.check import compile_and_check
from stitch_mcp.config import configure
import stitch_mcp

T = Path("tests/programs"); A = T / "attacks"; P = Path(".gpu/probe")
busy = (A / "atk_busy_beside.py").read_text().replace("@threads@", "1")
def busy_src(forged, duty, spin="100"):
    return busy.replace("@forged@", forged).replace("@duty@", duty).replace("@spin_us@", spin)
PAIRS = {"clamp": (A / "gpu_ref_small_relu.py", (T / "cand_relu_torch.py").read_text()),
         "cuda_relu": (A / "gpu_ref_small_relu.py", (T / "gpu_cand_relu.py").read_text()),
         "forge_small": (A / "gpu_ref_small_relu.py", (A / "gpu_atk_forge_events.py").read_text()),
         "mm": (A / "gpu_ref_mm.py", (P / "cand_mm.py").read_text()),
         "forge_mm": (A / "gpu_ref_mm.py", (P / "forge_mm.py").read_text()),
         "busy_honest_d1": (A / "gpu_ref_mm.py", busy_src("1.0", "1.0")),
         "busy_d03": (A / "gpu_ref_mm.py", busy_src("0.6", "0.3")),
         "busy_d06": (A / "gpu_ref_mm.py", busy_src("0.6", "0.6")),
         "busy_d1": (A / "gpu_ref_mm.py", busy_src("0.6", "1.0")),
         "busy_lo03": (A / "gpu_ref_mm.py", busy_src("0.6", "0.3", "500")),
         "busy_lo06": (A / "gpu_ref_mm.py", busy_src("0.6", "0.6", "500")),
         "busy_lo1": (A / "gpu_ref_mm.py", busy_src("0.6", "1.0", "500")),
         "busy50_d03": (A / "gpu_ref_mm.py", busy_src("0.5", "0.3", "1000")),
         "busy50_d06": (A / "gpu_ref_mm.py", busy_src("0.5", "0.6", "1000")),
         "mm2x": (T / "gpu_ref_mm_twice.py", (T / "gpu_cand_mm.py").read_text())}
reps = int(sys.argv[1]); names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(PAIRS)
print("stitch_mcp from", stitch_mcp.__file__, flush=True)
for i in range(reps):
    for name in names:
        ref, cand = PAIRS[name]
        configure(data_dir=f"/tmp/probe-{name}-{i}-{os.getpid()}")
        t0 = time.time()
        r = compile_and_check(reference=str(ref), candidate=cand, timing=True, compare_compile=False)
        t = r.timing
        b = t.batch if t else None
        codes = sorted(f.code for f in r.integrity.findings)
        sp = lambda v: None if v is None else round(v, 3)
        bt = (f"R={b.reference_ms*1e3:.1f}us C={b.copy_ms*1e3:.1f}us B={b.candidate_ms*1e3:.1f}us "
              f"whole={(b.whole_ms or 0)*1e3:.1f}us k={b.calls} sp={sp(b.speedup)} beside={sp(getattr(b, 'speedup_beside', None))} "
              f"alone={sp(getattr(b, 'reference_alone_ms', None))}/{sp(getattr(b, 'copy_alone_ms', None))} unverified={b.unverified} busy={b.busy_host} host_bound={b.host_bound} idle={b.idle_cpu_ms:.0f}/{b.idle_wall_ms:.0f}ms "
              f"room={b.room_ms} note={b.note[:100]!r}") if b else "no batches"
        eager = t.eager.median_ms * 1e3 if t and t.eager else float("nan")
        cand_ms = t.candidate.median_ms * 1e3 if t and t.candidate else float("nan")
        print(f"{name} rep{i} {r.verdict} speedup={r.speedup_vs_eager} eager={eager:.2f}us cand={cand_ms:.2f}us "
              f"findings={codes} | {bt} | alone_s={r.stage_seconds.get('timing_eager_batches_alone')} "
              f"timing_s={r.stage_seconds.get('timing')} load={os.getloadavg()[0]:.1f} {time.time()-t0:.1f}s", flush=True)
