"""Profilers: Nsight Systems / torch.profiler for references, Nsight Compute for candidates."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from stitch_mcp.config import get_settings


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
            subprocess.run([nsys, "profile", "-o", str(out), "--force-overwrite", "true", "true"],
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
