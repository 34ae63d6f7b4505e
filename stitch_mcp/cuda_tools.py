"""Finding a CUDA command-line tool (nvcc, ncu, nsys) on this machine, and its GPUs' device files.

Shared by `doctor`, the profilers, the checks and the workers; its own module so that none of them
imports another for it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def find_tool(name: str) -> str | None:
    """A CUDA tool on PATH or under CUDA_HOME / the usual install folders."""
    found = shutil.which(name)
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        cand = Path(home) / "bin" / name
        if cand.exists():
            return str(cand)
    return None


def tool_install_dirs(tool: str) -> list[str]:
    """Folders a sandboxed run of `tool` must see besides /usr: its install prefix and the real
    folders of the Nsight installs it may launch. CUDA's `bin/ncu` is a launcher script that looks
    for `nsight-compute*` beside the toolkit or under /opt/nvidia (on an H100 host it lives in
    /opt/nvidia, which a sandbox that grants only the toolkit hides: "Nsight Compute is not
    installed on your system")."""
    real = Path(os.path.realpath(tool))
    dirs = [real.parent.parent]
    for base in (Path(tool).parent.parent, real.parent.parent, Path("/opt/nvidia")):
        dirs += [Path(os.path.realpath(p)) for p in sorted(base.glob("nsight-*"))]
    return [str(d) for d in dict.fromkeys(dirs) if d.is_dir() and str(d) not in ("/", "/usr")]


def nvidia_devices() -> list[Path]:
    """The GPUs' device files (/dev/nvidia0, ...): whether this host can run CUDA at all, without
    NVML or the CUDA driver. A container's keep the host's numbers: only their count means anything."""
    return sorted(Path("/dev").glob("nvidia[0-9]*"))
