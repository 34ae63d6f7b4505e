"""The probe lines of calls 2-4 through the current rule (judge_times on a GPU): what it would have
said of the batches those checks measured. Where a line gives no `room=` (the room's time was not
raised, or was raised with a finding), the claim is taken as the candidate's reported time, or for a
forger (its events at 21% of eager's own kernel) as 0.21 of eager's. Run from the repository root:
PYTHONPATH=.:tests python docs/gpu-runs/2026-11-27-session22/s22replay.py"""
import glob
import re
from types import SimpleNamespace

from test_adversarial import _short_lanes

from stitch_mcp.judge.timing import Batches, judge_times

LINE = re.compile(r"^(\S+) rep\d \S+ speedup=(\S+) eager=([\d.]+)us cand=([\d.]+)us findings=(\[[^\]]*\]) \| "
                  r"R=([\d.]+)us C=([\d.]+)us B=([\d.]+)us whole=([\d.]+)us k=(\d+).*?room=(\S+)")
for path in sorted(glob.glob("docs/gpu-runs/2026-11-27-session22/call[234]/probe_*.log")):
    for line in open(path):
        m = LINE.search(line)
        if not m:
            continue
        name, speedup, eager, cand, found, r, c, b, whole, k, room = m.groups()
        eager, r, c, b, whole = (float(x) / 1e3 for x in (eager, r, c, b, whole))
        claim = float(room) if room != "None" else 0.21 * eager if name.startswith("forge") else float(cand) / 1e3
        batches = Batches(int(k), b, r, c, copy_spread_ms=0.003, candidate_whole_ms=whole,
                          reference_whole_ms=r + whole - b, busy_host=True)
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device="cuda"), _short_lanes(eager, 0.40, claim, 0.40), batches)
        print(f"{path.split('/')[-2]} {path.split('/')[-1][6:-4]:5s} {name:12s} logged {speedup:>7s} {found:24s} "
              f"now {eager / res['timing']['candidate']['median_ms']:.3f} {[f['code'] for f in res['findings']]} "
              f"unverified={res['timing']['batch'].get('unverified', False)}")
