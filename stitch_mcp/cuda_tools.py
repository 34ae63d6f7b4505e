"""Finding a CUDA command-line tool (nvcc, ncu, nsys) on this machine.

Shared by `doctor` and the profilers; its own module so that neither imports the other.
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
