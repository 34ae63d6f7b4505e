"""On a GPU host: CUDA inside stitch_mcp.sandbox at every isolation level, and whether GPU memory the judge
owns reaches the candidate through CUDA IPC across the sandbox boundary.

    python tools/gpu/sandbox_check.py            # bwrap from PATH or STITCH_BWRAP=/path/to/bwrap

Per level: the isolation line, a CUDA sum inside (as the slot's uid, in its namespaces), then two ways of
sharing judge GPU memory with the candidate through a pipe passed with pass_fds: torch.multiprocessing's
reduce_tensor (legacy CUDA IPC plus a ref-counter file in /dev/shm, private in the sandbox), a bare cudaIpc
handle (the driver checks the exporter's pid: expected to fail across pid namespaces), and a VMM allocation
exported as a POSIX fd (cuMemExportToShareableHandle) passed with pass_fds. The candidate doubles each in
place; the judge checks it saw that. The namespace levels run with and without their own pid namespace.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]  # cudaIpcMemHandle_t, passed by value


def _cudart():
    import torch  # (loads the CUDA runtime torch ships)

    rt = None
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if rt is None:
        import glob

        found = glob.glob(str(Path(torch.__file__).parents[1] / "nvidia" / "**" / "libcudart.so*"), recursive=True)
        rt = ctypes.CDLL(found[0])
    rt.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), IpcHandle, ctypes.c_uint]
    rt.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(IpcHandle), ctypes.c_void_p]
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return rt


class MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocationProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", MemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", ctypes.c_ubyte * 8)]


class AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", MemLocation), ("flags", ctypes.c_int)]


POSIX_FD, PINNED, ON_DEVICE, READ_WRITE = 1, 1, 1, 3


def _driver():
    cu = ctypes.CDLL("libcuda.so.1")

    def call(name, *args):
        err = getattr(cu, name)(*args)
        if err:
            raise RuntimeError(f"{name} error {err}")

    return cu, call


def vmm_map(call, handle, size: int, device: int) -> int:
    """Map an exportable (VMM) allocation into this process and return its device address."""
    ptr = ctypes.c_ulonglong()
    call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_ulonglong(0),
         ctypes.c_ulonglong(0))
    call("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0))
    desc = AccessDesc(MemLocation(ON_DEVICE, device), READ_WRITE)
    call("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(desc), ctypes.c_size_t(1))
    return ptr.value


def vmm_export(numel: int) -> tuple[int, int, int]:
    """The judge's side: a VMM allocation holding 0..numel-1 (float32), exported as a POSIX fd.
    Returns (fd, size, address). The fd crosses into the sandbox with pass_fds: no pid lookup involved."""
    import torch

    device = torch.cuda.current_device()
    _, call = _driver()
    prop = AllocationProp(PINNED, POSIX_FD, MemLocation(ON_DEVICE, device), None)
    granularity = ctypes.c_size_t()
    call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), 0)
    size = granularity.value
    handle = ctypes.c_ulonglong()
    call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_ulonglong(0))
    fd = ctypes.c_int()
    call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, POSIX_FD, ctypes.c_ulonglong(0))
    ptr = vmm_map(call, handle, size, device)
    values = (ctypes.c_float * numel)(*range(numel))
    call("cuMemcpyHtoD_v2", ctypes.c_ulonglong(ptr), values, ctypes.c_size_t(ctypes.sizeof(values)))
    return fd.value, size, ptr


def vmm_import_and_double(fd: int, size: int, numel: int) -> None:
    import torch

    _, call = _driver()
    handle = ctypes.c_ulonglong()
    call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), POSIX_FD)
    ptr = vmm_map(call, handle, size, torch.cuda.current_device())
    host = (ctypes.c_float * numel)()
    call("cuMemcpyDtoH_v2", host, ctypes.c_ulonglong(ptr), ctypes.c_size_t(ctypes.sizeof(host)))
    for i in range(numel):
        host[i] *= 2
    call("cuMemcpyHtoD_v2", ctypes.c_ulonglong(ptr), host, ctypes.c_size_t(ctypes.sizeof(host)))
    call("cuCtxSynchronize")


def _copy(rt, dst, src, nbytes: int, kind: int) -> None:
    err = rt.cudaMemcpy(dst, src, nbytes, kind)
    if err:
        raise RuntimeError(f"cudaMemcpy error {err}")


def child(read_fd: int) -> None:
    """Inside the sandbox: CUDA works? then open both kinds of shared tensors and double them."""
    import torch

    print("inside: uid", os.getuid(), "pid", os.getpid(), "cgroup", Path("/proc/self/cgroup").read_text().strip())
    print("cuda sum", float(torch.ones(4, device="cuda").sum()), flush=True)
    message = pickle.loads(os.read(read_fd, 1 << 16))
    try:
        rebuild, args = message["reduce_tensor"]
        shared = rebuild(*args)
        shared.mul_(2)
        torch.cuda.synchronize()
        print("reduce_tensor: opened, sum now", float(shared.sum()), flush=True)
    except Exception as exc:
        print("reduce_tensor: FAILED", type(exc).__name__, exc, flush=True)
    try:
        rt = _cudart()
        ptr = ctypes.c_void_p()
        handle = IpcHandle.from_buffer_copy(message["ipc_handle"])
        err = rt.cudaIpcOpenMemHandle(ctypes.byref(ptr), handle, 1)
        if err:
            raise RuntimeError(f"cudaIpcOpenMemHandle error {err}")
        host = (ctypes.c_float * message["numel"])()
        _copy(rt, ctypes.addressof(host), ptr, ctypes.sizeof(host), 2)  # device to host
        for i in range(message["numel"]):
            host[i] *= 2
        _copy(rt, ptr, ctypes.addressof(host), ctypes.sizeof(host), 1)  # host to device
        rt.cudaDeviceSynchronize()
        rt.cudaIpcCloseMemHandle(ptr)
        print("cudaIpc: opened, doubled", flush=True)
    except Exception as exc:
        print("cudaIpc: FAILED", type(exc).__name__, exc, flush=True)
    try:
        vmm_import_and_double(message["vmm_fd"], message["vmm_size"], message["numel"])
        print("VMM fd: opened, doubled", flush=True)
    except Exception as exc:
        print("VMM fd: FAILED", type(exc).__name__, exc, flush=True)


def check_level(level: str, pid_namespace: bool) -> None:
    import torch
    from torch.multiprocessing.reductions import reduce_tensor

    from stitch_mcp.config import configure
    from stitch_mcp.sandbox import SandboxPolicy, kill_sandbox, probe_isolation, sandboxed

    configure(sandbox=level)
    iso = probe_isolation()
    print(f"=== {level}, pid_namespace={pid_namespace}: probe got {iso.level}")
    if iso.level != level:
        print("    skipped:", "; ".join(iso.warnings))
        return
    a = torch.arange(16, device="cuda", dtype=torch.float32)
    rt = _cudart()
    b = ctypes.c_void_p()  # its own cudaMalloc: an IPC handle names a whole allocation, not a tensor inside one
    assert rt.cudaMalloc(ctypes.byref(b), 64) == 0
    start = (ctypes.c_float * 16)(*range(16))
    _copy(rt, b, ctypes.addressof(start), 64, 1)
    handle = IpcHandle()
    err = rt.cudaIpcGetMemHandle(ctypes.byref(handle), b)
    vmm_fd, vmm_size, vmm_ptr = vmm_export(16)
    try:
        shared_a = reduce_tensor(a)
    except Exception as exc:
        print("judge: reduce_tensor FAILED", type(exc).__name__, exc)
        shared_a = None
    message = {"reduce_tensor": shared_a, "ipc_handle": bytes(handle) if not err else bytes(64), "numel": 16,
               "vmm_fd": vmm_fd, "vmm_size": vmm_size}
    env = {k: v for k, v in os.environ.items() if k in ("CUDA_VISIBLE_DEVICES",)}
    env["PYTHONPATH"] = str(REPO)
    work = Path(tempfile.mkdtemp(prefix="stitch-gpu-sandbox-"))
    policy = SandboxPolicy(workdir=work, read_only=[REPO / "stitch_mcp", HERE.parent], gpu=True,
                           memory_bytes=16 << 30, pids_max=1024, env=env, pid_namespace=pid_namespace)
    read_end, write_end = os.pipe()
    os.write(write_end, pickle.dumps(message))
    cmd = sandboxed([sys.executable, str(HERE), "--child", str(read_end)], policy)
    print("applied:", cmd.isolation.line(), "| warnings:", "; ".join(cmd.isolation.warnings))
    started = time.perf_counter()
    proc = subprocess.Popen(**cmd.popen_kwargs(pass_fds=(read_end, vmm_fd)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        kill_sandbox(proc, cmd)
        out = "timed out"
    torch.cuda.synchronize()
    after = (ctypes.c_float * 16)()
    _copy(rt, ctypes.addressof(after), b, 64, 2)
    print(f"rc {proc.returncode} in {time.perf_counter() - started:.2f} s\n{out.strip()}")
    print("judge sees reduce_tensor doubled:", bool((a == torch.arange(16, device='cuda') * 2).all()),
          "| cudaIpc doubled:", list(after) == [2.0 * i for i in range(16)], end=" ")
    _, call = _driver()
    vmm_after = (ctypes.c_float * 16)()
    call("cuMemcpyDtoH_v2", vmm_after, ctypes.c_ulonglong(vmm_ptr), ctypes.c_size_t(64))
    print("| VMM fd doubled:", list(vmm_after) == [2.0 * i for i in range(16)])
    os.close(vmm_fd)
    os.close(read_end)
    os.close(write_end)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
        return
    sys.path.insert(0, str(REPO))
    from stitch_mcp.doctor import isolation_line

    print("doctor:", isolation_line().model_dump_json())
    for level in ("bubblewrap", "namespaces", "uid", "none"):
        for pid_namespace in (True, False) if level in ("bubblewrap", "namespaces") else (True,):
            try:
                check_level(level, pid_namespace)
            except Exception as exc:
                print(f"=== {level}: FAILED in the judge: {type(exc).__name__}: {exc}")
    from stitch_mcp.cgroups import cleanup_cgroup

    cleanup_cgroup(0)


if __name__ == "__main__":
    main()
