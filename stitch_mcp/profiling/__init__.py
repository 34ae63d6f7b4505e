"""Profilers: Nsight Systems / torch.profiler for references, Nsight Compute for candidates."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from stitch_mcp.config import get_settings

# What profile_reference asks of nsys; the probe asks the same. CPU sampling and context-switch
# tracing stay off: on a GPU host (kernel 6.x) nsys 2022.4's agent spun forever on a perf_event
# after the program exited when they were on, and the reference's digest does not use them.
NSYS_PROFILE_FLAGS = ("--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none", "--force-overwrite=true")


@lru_cache(maxsize=1)
def nsys_status() -> tuple[bool, str]:
    """Whether an `nsys` here can write a report it can export (checked once, cached on disk).

    Some installs ship an nsys (e.g. the one bundled in Nsight Compute) that writes a .qdstrm
    trace but cannot import it into a report: that one is treated as missing.
    """
    from stitch_mcp.cuda_tools import find_tool

    nsys = find_tool("nsys")
    if nsys is None:
        return False, "nsys not found"
    stamp = f"{nsys}:{os.stat(nsys).st_mtime_ns}"
    cache = get_settings().cache_dir / "nsys_status.json"
    try:
        saved = json.loads(cache.read_text())
        if saved.get("stamp") == stamp:
            return bool(saved["ok"]), saved["detail"]
    except (OSError, ValueError, KeyError):
        pass
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe"
        try:
            subprocess.run([nsys, "profile", *NSYS_PROFILE_FLAGS, "-o", str(out), "true"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, detail = False, f"{nsys}: probe failed ({exc})"
        else:
            ok = out.with_suffix(".nsys-rep").exists()
            detail = f"{nsys}: writes reports" if ok else f"{nsys}: cannot write a report (only a .qdstrm)"
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"stamp": stamp, "ok": ok, "detail": detail}))
    except OSError:
        pass
    return ok, detail


def _cupti_versions(files) -> dict[tuple[int, ...], Path]:
    """libcupti.so.13 / libcupti.so.2025.1.0 / libcupti.so.11.8 -> their versions, newest last."""
    found = {}
    for f in files:
        m = re.fullmatch(r"libcupti\.so\.(\d+(?:\.\d+)*)", f.name)
        if m and f.is_file():
            found[tuple(int(x) for x in m.group(1).split("."))] = f
    return dict(sorted(found.items()))


def _runtime_cupti() -> Path | None:
    """The newest CUPTI beside the CUDA runtime this Python uses: the nvidia-* wheels torch depends on
    (nvidia/cu13/lib, nvidia/cuda_cupti/lib), else the toolkit's extras/CUPTI."""
    files = []
    for root in dict.fromkeys(p for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))):
        files += Path(root, "nvidia").glob("*/lib/libcupti.so.*")
    for home in filter(None, (os.environ.get("CUDA_HOME"), "/usr/local/cuda")):
        files += Path(home, "extras", "CUPTI", "lib64").glob("libcupti.so.*")
    versions = _cupti_versions(files)
    return versions[max(versions)] if versions else None


def nsys_cupti_env(nsys: str, folder: Path) -> dict[str, str]:
    """Environment for `nsys profile` so it traces kernels of a CUDA runtime newer than it knows.

    An nsys older than the runtime (Debian's 2022.4 ships CUPTI 11.8; torch runs CUDA 13) records
    the NVTX ranges but no kernel: its CUPTI fails on the runtime's newer API ("Unknown runtime API
    function index"). nsys loads the CUPTI it finds under NSYS_CUPTI_LIBRARY_PATH instead, by the
    version it asks for, so `folder` gets links of every version name to the runtime's CUPTI. Used
    only when the runtime's CUPTI is newer than every one nsys bundles, and never over a user's own
    NSYS_CUPTI_LIBRARY_PATH. Seen on an H100: 0 kernels without it, all of them with it."""
    if os.environ.get("NSYS_CUPTI_LIBRARY_PATH"):
        return {}
    runtime = _runtime_cupti()
    bundled = _cupti_versions(Path(os.path.realpath(nsys)).parent.parent.glob("target-linux-*/libcupti.so.*"))
    if runtime is None or not bundled:
        return {}
    major = int(re.search(r"\.so\.(\d+)", runtime.name).group(1))
    if major <= max(bundled)[0]:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    names = ["libcupti.so"] + [f"libcupti.so.{v}" for v in ("11.8", *(f"{m}.{n}" for m in (12, 13, 14)
                                                                        for n in range(10)))]
    for name in names:
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(runtime)
    return {"NSYS_CUPTI_LIBRARY_PATH": str(folder)}
