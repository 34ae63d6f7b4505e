"""The build cache on disk and what names its entries: content hashes, the environment
fingerprint (torch, Python, compilers, GPU architecture) that goes into every extension's key,
atomic writes, content-named folders of stand-in headers, a candidate's manifest of extension
keys, the `flock`s that serialise builds of one directory, and importing a built `.so`.

The manifest helpers run on the parent (judge) side and need no torch.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

CACHE_VERSION = "1"


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    """Readers (other workers building at the same time) see the whole file or none of it; two
    threads writing it at once each write a file of their own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _header_dir(root: Path, files: dict[str, str], kind: str = "kernel_headers") -> Path:
    """A folder of stand-in headers, named by their content (written once)."""
    folder = root / kind / _sha(files)[:16]
    for rel, text in files.items():
        if not (folder / rel).exists():
            _write_atomically(folder / rel, text)
    return folder


# ------------------------------------------------------------------ manifest (parent side)


def manifest_path(build_root: Path, candidate_source: str) -> Path:
    return Path(build_root) / "manifests" / f"{_sha(CACHE_VERSION, candidate_source)[:32]}.json"


def cached_manifest(build_root: Path, candidate_source: str) -> dict | None:
    """The extensions a candidate built before, if every one of them is still in the cache."""
    path = manifest_path(build_root, candidate_source)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for ext in data.get("extensions", []):
        obj = Path(build_root) / "objects" / ext["key"]
        if not ((obj / "done").exists() or (data.get("needs_gpu") and (obj / "compiled").exists())):
            return None
    return data


def write_manifest(build_root: Path, candidate_source: str, data: dict) -> None:
    _write_atomically(manifest_path(build_root, candidate_source), json.dumps(data))


# ------------------------------------------------------------------ environment fingerprint

_env_cache: dict[str, Any] = {}


def _tool_version(cmd: list[str]) -> str:
    key = " ".join(cmd)
    if key not in _env_cache:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            _env_cache[key] = (out.stdout or out.stderr).strip().splitlines()[-1:] or [""]
        except (OSError, subprocess.SubprocessError):
            _env_cache[key] = ["missing"]
    return _env_cache[key][0]


def cuda_arch() -> str:
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    if arch:
        return arch
    import torch

    if torch.cuda.is_available():
        caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return ";".join(f"{a}.{b}" for a, b in caps)
    return "sm_90"


def env_fingerprint(with_cuda: bool) -> dict:
    import torch

    fp = {"v": CACHE_VERSION, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
          "python": sys.version_info[:2], "cxx": os.environ.get("CXX", "c++"),
          "cxx_version": _tool_version([os.environ.get("CXX", "c++"), "--version"])[:80]}
    if with_cuda:
        fp["nvcc"] = _tool_version(["nvcc", "--version"])
        fp["arch"] = cuda_arch()
    return fp


# ------------------------------------------------------------------ locks and built objects (worker side)


def _lock_dir(path: Path, blocking: bool) -> int | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def _unlock(fd: int | None) -> None:
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _import_so(module_name: str, location: Path):
    """Import an extension module from `location`: its folder, or the .so itself (any name, e.g.
    /proc/self/fd/N: the loader is named explicitly, not chosen by the file's suffix)."""
    import importlib.machinery
    import importlib.util

    path = location / f"{module_name}.so" if location.is_dir() else location
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(path))
    spec = importlib.util.spec_from_file_location(module_name, str(path), loader=loader)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
