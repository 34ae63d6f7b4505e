"""How long torch.cuda.init()+synchronize takes in 1, 2, 3 processes started at once (each imported torch first)."""
import os, subprocess, sys, time, json
CHILD = r'''
import sys, time, os
import torch
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
t0 = time.monotonic(); torch.cuda.init(); torch.cuda.synchronize(); t1 = time.monotonic()
x = torch.ones(1, device="cuda"); torch.cuda.synchronize(); t2 = time.monotonic()
print(json.dumps({"init": round(t1 - t0, 3), "first_tensor": round(t2 - t1, 3)}) if False else f"{t1-t0:.3f} {t2-t1:.3f}", flush=True)
'''
def trial(n):
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    for p in procs: assert p.stdout.readline().strip() == "ready"
    for p in procs: p.stdin.write("go\n"); p.stdin.flush()
    out = [p.stdout.readline().strip() for p in procs]
    for p in procs: p.wait()
    return out
for n in (1, 1, 2, 3, 3, 1):
    print(n, trial(n), flush=True)
