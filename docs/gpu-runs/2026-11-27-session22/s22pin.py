"""Host time per launch, the process unpinned or held to one core (as the judge holds the rooms)."""
import os, sys, time, torch
x = torch.randn(65536, device="cuda"); y = torch.empty_like(x); m = torch.randn(1024, 1024, device="cuda")
def host_us(fn, n=2000):
    fn(); torch.cuda.synchronize(); h0 = time.perf_counter()
    for _ in range(n): fn()
    h = (time.perf_counter() - h0) / n * 1e6; torch.cuda.synchronize(); return h
def loop_us(k=256):  # as the room's batch: forward, then its copy, per call
    torch.cuda.synchronize(); h0 = time.perf_counter()
    for _ in range(k):
        o = torch.relu(x); y.copy_(o)
    torch.cuda.synchronize(); return (time.perf_counter() - h0) / k * 1e6
print(sys.argv[1], f"affinity {sorted(os.sched_getaffinity(0))[:4]}... threads {len(os.listdir('/proc/self/task'))}: "
      f"copy_ {host_us(lambda: y.copy_(x)):.1f} us, relu {host_us(lambda: torch.relu(x)):.1f} us, "
      f"mm {host_us(lambda: torch.mm(m, m), 200):.1f} us, relu+copy loop {loop_us():.1f} us a call", flush=True)
