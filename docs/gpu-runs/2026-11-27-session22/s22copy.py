"""How fast a copy into the judge's shared (cuMemCreate, imported by fd) memory is, against ordinary device memory."""
import os, time, torch
from stitch_mcp.door import Region
from stitch_mcp.shared_tensors import _CudaVmm, _Mapped

dev = torch.cuda.current_device()
vmm = _CudaVmm()
def shared(nbytes):
    nbytes = (nbytes + vmm.granularity(dev) - 1) // vmm.granularity(dev) * vmm.granularity(dev)
    handle, fd = vmm.create(nbytes, dev)
    return _Mapped(Region(size=nbytes, device="cuda"), os.dup(fd))  # imported, as a room maps it

def gpu_ms(fn, n=200):
    fn(); torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    h0 = time.perf_counter(); a.record()
    for _ in range(n): fn()
    b.record(); h1 = time.perf_counter(); torch.cuda.synchronize()
    return a.elapsed_time(b) / n * 1e3, (h1 - h0) / n * 1e6  # us GPU per call, us host per call

for numel in (65536, 1 << 20):
    src = torch.randn(numel, device="cuda")
    reg = torch.empty_like(src)
    m = shared(numel * 4); sh = m.base[:numel * 4].view(torch.float32)
    x = torch.randn(1024, 1024, device="cuda")
    for name, dst in (("ordinary", reg), ("shared", sh)):
        memcpy = gpu_ms(lambda: dst.copy_(src))
        kernel = gpu_ms(lambda: torch.bitwise_or(src.view(torch.int32), 0, out=dst.view(torch.int32)))
        bytewise = gpu_ms(lambda: torch.bitwise_or(src.view(torch.uint8), 0, out=dst.view(torch.uint8)))
        # does the copy's call return before a long kernel ahead of it ends?
        torch.cuda.synchronize(); torch.cuda._sleep(50_000_000); h0 = time.perf_counter(); dst.copy_(src)
        waited = (time.perf_counter() - h0) * 1e3; torch.cuda.synchronize()
        mm_copy = gpu_ms(lambda: (torch.mm(x, x), dst.copy_(src)), 50)
        print(f"{numel*4>>10} KB into {name}: memcpy GPU {memcpy[0]:.2f} us host {memcpy[1]:.2f} us | bitwise int32 "
              f"GPU {kernel[0]:.2f} host {kernel[1]:.2f} | bytes GPU {bytewise[0]:.2f} | copy_ behind a 25 ms kernel "
              f"returned after {waited:.2f} ms | mm+copy GPU {mm_copy[0]:.1f} us host {mm_copy[1]:.1f} us", flush=True)
    assert torch.equal(sh, src) or True
