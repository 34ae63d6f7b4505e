"""Shared tensor buffers between the judge and the candidate room (both sides of the door).

The judge creates regions and hands their file descriptors to the room (door.Attach); both map
the same memory. On the CPU a region is a sealed memfd (the room cannot shrink it under the
judge's mapping). On a GPU it is device memory from the CUDA driver's virtual memory API
(cuMemCreate with a POSIX file-descriptor handle): unlike cudaIpc handles, a file descriptor
crosses pid namespaces and uids (checked on an H100: plain, setpriv uid, unshare -p -n).

A region holds only what the judge puts there for the room: copies of inputs, parameters, and
the buffers outputs are copied into. The judge keeps its own private copies of everything it
compares against, and clones what it reads before it reads it.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
from typing import Any

from stitch_mcp.door import Region, SharedTensor

ALIGN = 256


def _aligned(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


def dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


# ------------------------------------------------------------------ CUDA driver VMM, through ctypes


class _Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Loc),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", ctypes.c_ubyte * 8)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Loc), ("flags", ctypes.c_int)]


_PINNED, _POSIX_FD, _DEVICE, _READ_WRITE = 1, 1, 1, 3


class _CudaVmm:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")

    def _ok(self, rc: int, what: str) -> None:
        if rc:
            raise RuntimeError(f"{what} failed (CUDA driver error {rc})")

    def granularity(self, device: int) -> int:
        g = ctypes.c_size_t()
        self._ok(self.lib.cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(self._prop(device)), 0),
                 "cuMemGetAllocationGranularity")
        return g.value

    @staticmethod
    def _prop(device: int) -> _Prop:
        return _Prop(_PINNED, _POSIX_FD, _Loc(_DEVICE, device), None)

    def create(self, size: int, device: int) -> tuple[int, int]:
        """A new allocation: (handle, exported fd)."""
        handle, fd = ctypes.c_uint64(), ctypes.c_int()
        self._ok(self.lib.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(self._prop(device)),
                                      ctypes.c_uint64(0)), "cuMemCreate")
        self._ok(self.lib.cuMemExportToShareableHandle(ctypes.byref(fd), handle, _POSIX_FD, ctypes.c_uint64(0)),
                 "cuMemExportToShareableHandle")
        return handle.value, fd.value

    def import_fd(self, fd: int) -> int:
        handle = ctypes.c_uint64()
        self._ok(self.lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD),
                 "cuMemImportFromShareableHandle")
        return handle.value

    def map(self, handle: int, size: int, device: int) -> int:
        va = ctypes.c_uint64()
        self._ok(self.lib.cuMemAddressReserve(ctypes.byref(va), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                              ctypes.c_uint64(0), ctypes.c_uint64(0)), "cuMemAddressReserve")
        self._ok(self.lib.cuMemMap(va, ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_uint64(handle),
                                   ctypes.c_uint64(0)), "cuMemMap")
        access = _Access(_Loc(_DEVICE, device), _READ_WRITE)
        self._ok(self.lib.cuMemSetAccess(va, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1)),
                 "cuMemSetAccess")
        return va.value

    def unmap(self, va: int, size: int, handle: int) -> None:
        self.lib.cuMemUnmap(ctypes.c_uint64(va), ctypes.c_size_t(size))
        self.lib.cuMemAddressFree(ctypes.c_uint64(va), ctypes.c_size_t(size))
        self.lib.cuMemRelease(ctypes.c_uint64(handle))


class _DevicePointer:
    """Enough of __cuda_array_interface__ for torch.as_tensor to wrap mapped device memory."""

    def __init__(self, ptr: int, size: int):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (ptr, False), "version": 3}


# ------------------------------------------------------------------ one mapped region


class _Mapped:
    """A region mapped into this process, as one uint8 tensor."""

    def __init__(self, region: Region, fd: int, handle: int | None = None):
        import torch

        self.region, self.fd = region, fd
        self.size = region.size
        if region.device == "cpu":
            self.mm = mmap.mmap(fd, max(self.size, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self.base = torch.frombuffer(self.mm, dtype=torch.uint8, count=self.size) if self.size else \
                torch.empty(0, dtype=torch.uint8)
            self.vmm = None
        else:
            self.vmm = _CudaVmm()
            device = torch.cuda.current_device()
            self.handle = handle if handle is not None else self.vmm.import_fd(fd)
            self.va = self.vmm.map(self.handle, self.size, device)
            self.base = torch.as_tensor(_DevicePointer(self.va, self.size), device=f"cuda:{device}")

    def view(self, spec: SharedTensor):
        import torch

        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown dtype {spec.dtype!r}")
        numel = 1
        for d in spec.shape:
            numel *= d
        nbytes = numel * dtype.itemsize
        if spec.offset % ALIGN or spec.offset + nbytes > self.size:
            raise ValueError("a shared tensor outside its region")
        return self.base[spec.offset:spec.offset + nbytes].view(dtype).view(spec.shape)

    def close(self) -> None:
        self.base = None
        if self.vmm is not None:
            self.vmm.unmap(self.va, self.size, self.handle)
        else:
            try:
                self.mm.close()
            except BufferError:  # a view still exported: the mapping goes with the process
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass


# ------------------------------------------------------------------ judge side


class Arena:
    """The judge's shared regions: `layout(templates)` makes one with a slice per tensor;
    `since(n)` lists the regions a room that has the first n lacks."""

    def __init__(self, device: str):
        self.device = "cuda" if device.startswith("cuda") else "cpu"
        self.mapped: list[_Mapped] = []

    def _new_region(self, nbytes: int) -> int:
        import torch

        handle = None
        if self.device == "cpu":
            fd = os.memfd_create("stitch-shared", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, nbytes)
            # the room may write the contents, never change the size under our mapping (SIGBUS)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        else:
            vmm = _CudaVmm()
            device = torch.cuda.current_device()
            nbytes = _aligned(max(nbytes, 1), vmm.granularity(device))
            handle, fd = vmm.create(nbytes, device)
        self.mapped.append(_Mapped(Region(size=nbytes, device=self.device), fd,
                                   handle))
        return len(self.mapped) - 1

    def layout(self, templates: list[Any]) -> list[tuple[SharedTensor, Any] | None]:
        """One region holding a slice for each tensor of `templates` (None for non-tensors):
        [(spec, the judge's view of it)]."""
        import torch

        offsets, total = [], 0
        for t in templates:
            if isinstance(t, torch.Tensor):
                offsets.append(total)
                total += _aligned(t.numel() * t.element_size())
            else:
                offsets.append(None)
        region = self._new_region(total)
        out: list[tuple[SharedTensor, Any] | None] = []
        for t, off in zip(templates, offsets):
            if off is None:
                out.append(None)
                continue
            spec = SharedTensor(region=region, offset=off, shape=list(t.shape), dtype=dtype_name(t))
            out.append((spec, self.mapped[region].view(spec)))
        return out

    def since(self, first: int) -> tuple[list[Region], list[int]]:
        """The regions from index `first` on, and their fds (for a room that has the others)."""
        new = self.mapped[first:]
        return [m.region for m in new], [m.fd for m in new]

    def close(self) -> None:
        for m in self.mapped:
            m.close()
        self.mapped.clear()


# ------------------------------------------------------------------ room side


class Attached:
    """The room's mappings of the judge's regions, in the order they were attached."""

    def __init__(self) -> None:
        self.mapped: list[_Mapped] = []

    def attach(self, regions: list[Region], fds: list[int]) -> None:
        if len(regions) != len(fds):
            raise ValueError(f"{len(regions)} regions but {len(fds)} file descriptors")
        for region, fd in zip(regions, fds):
            self.mapped.append(_Mapped(region, fd))

    def view(self, spec: SharedTensor):
        if spec.region >= len(self.mapped):
            raise ValueError(f"no region {spec.region}")
        return self.mapped[spec.region].view(spec)
