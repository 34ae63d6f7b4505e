"""On a GPU host: CUDA inside stitch_mcp.sandbox at every isolation level, and whether GPU memory the judge
owns reaches the candidate through CUDA IPC across the sandbox boundary.

    python tools/gpu/sandbox_check.py            # bwrap from PATH or STITCH_BWRAP=/path/to/bwrap

Per level: the isolation line, a CUDA sum inside (as the slot's uid, in its namespaces), then two ways of
sharing a judge tensor with the candidate through a pipe passed with pass_fds: torch.multiprocessing's
reduce_tensor (needs its ref-counter file in /dev/shm, private in the sandbox) and a bare cudaIpc handle.
The candidate doubles the tensor in place; the judge checks it saw that.
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


def check_level(level: str) -> None:
    import torch
    from torch.multiprocessing.reductions import reduce_tensor

    from stitch_mcp.config import configure
    from stitch_mcp.sandbox import SandboxPolicy, kill_sandbox, probe_isolation, sandboxed

    configure(sandbox=level)
    iso = probe_isolation()
    print(f"=== {level}: got {iso.line()}")
    for warning in iso.warnings:
        print("    warning:", warning)
    if iso.level != level:
        return
    a = torch.arange(16, device="cuda", dtype=torch.float32)
    rt = _cudart()
    b = ctypes.c_void_p()  # its own cudaMalloc: an IPC handle names a whole allocation, not a tensor inside one
    assert rt.cudaMalloc(ctypes.byref(b), 64) == 0
    start = (ctypes.c_float * 16)(*range(16))
    _copy(rt, b, ctypes.addressof(start), 64, 1)
    handle = IpcHandle()
    err = rt.cudaIpcGetMemHandle(ctypes.byref(handle), b)
    message = {"reduce_tensor": reduce_tensor(a), "ipc_handle": bytes(handle) if not err else bytes(64), "numel": 16}
    env = {k: v for k, v in os.environ.items() if k in ("CUDA_VISIBLE_DEVICES",)}
    env["PYTHONPATH"] = str(REPO)
    work = Path(tempfile.mkdtemp(prefix="stitch-gpu-sandbox-"))
    policy = SandboxPolicy(workdir=work, read_only=[REPO / "stitch_mcp", HERE.parent], gpu=True,
                           memory_bytes=16 << 30, pids_max=1024, env=env)
    read_end, write_end = os.pipe()
    os.write(write_end, pickle.dumps(message))
    cmd = sandboxed([sys.executable, str(HERE), "--child", str(read_end)], policy)
    started = time.perf_counter()
    proc = subprocess.Popen(**cmd.popen_kwargs(pass_fds=(read_end,)), stdout=subprocess.PIPE,
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
          "| cudaIpc doubled:", list(after) == [2.0 * i for i in range(16)])
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
        try:
            check_level(level)
        except Exception as exc:
            print(f"=== {level}: FAILED in the judge: {type(exc).__name__}: {exc}")
    from stitch_mcp.sandbox import cleanup_cgroup

    cleanup_cgroup(0)


if __name__ == "__main__":
    main()
