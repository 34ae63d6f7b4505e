"""`stitch-mcp doctor`: what this machine can do, each line ok / missing / warning with how to fix it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from stitch_mcp.config import get_settings
from stitch_mcp.cuda_tools import find_tool
from stitch_mcp.models import DoctorLine, DoctorReport


def _version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"failed: {exc}"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[-1] if text else ""


def gpu_line() -> DoctorLine:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        driver = pynvml.nvmlSystemGetDriverVersion()
        return DoctorLine(name="gpu", status="ok" if count else "missing",
                          detail=f"{count} GPU(s): {', '.join(map(str, names))}; driver {driver}")
    except Exception as exc:
        return DoctorLine(name="gpu", status="missing", detail=f"NVML unavailable ({type(exc).__name__})",
                          fix="no NVIDIA GPU/driver: the CPU path still checks C++ candidates")


def counters_line(ncu: str | None) -> DoctorLine:
    params = Path("/proc/driver/nvidia/params")
    if ncu is None:
        return DoctorLine(name="ncu counters", status="missing", detail="ncu not found")
    if params.exists() and "RmProfilingAdminOnly: 1" in params.read_text(errors="replace") and os.geteuid() != 0:
        return DoctorLine(name="ncu counters", status="warning", detail="driver restricts counters to admins",
                          fix="run as root or set NVreg_RestrictProfilingToAdminUsers=0 (ERR_NVGPUCTRPERM)")
    return DoctorLine(name="ncu counters", status="ok", detail="not restricted to admins")


def isolation_line() -> DoctorLine:
    """How candidate processes are isolated here (stitch_mcp.sandbox), and what is missing."""
    from stitch_mcp.sandbox import probe_isolation

    iso = probe_isolation()
    strong = iso.level in ("bubblewrap", "namespaces")
    detail = iso.line() + "".join(f"; warning: {w}" for w in iso.warnings)
    fix = "" if iso.level == "bubblewrap" else ("install bubblewrap (apt-get install bubblewrap) and run as root, "
                                                "or as a user allowed to create user namespaces")
    return DoctorLine(name="isolation", status="ok" if strong else "warning", detail=detail, fix=fix)


def run_doctor() -> DoctorReport:
    settings = get_settings()
    lines = [gpu_line()]
    try:
        import torch

        cuda = torch.cuda.is_available()
        lines.append(DoctorLine(name="torch", status="ok" if cuda else "warning",
                                detail=f"{torch.__version__}, CUDA {torch.version.cuda or 'none'}, "
                                       f"{'device ' + torch.cuda.get_device_name(0) if cuda else 'no CUDA device'}",
                                fix="" if cuda else "install a CUDA build of torch on a GPU machine"))
    except ImportError:
        lines.append(DoctorLine(name="torch", status="missing", fix="required: pip install torch"))
    for tool, why in [("nvcc", "compiles CUDA candidates"), ("ncu", "profile_kernel"),
                      ("compute-sanitizer", "memory checks"), ("ninja", "fast extension builds")]:
        path = find_tool(tool) if tool != "ninja" else shutil.which("ninja")
        lines.append(DoctorLine(name=tool, status="ok" if path else "missing",
                                detail=f"{path}: {_version([path, '--version'])}" if path else why,
                                fix="" if path else f"install {tool} ({why})"))
    lines.append(counters_line(find_tool("ncu")))
    from stitch_mcp.profiling import nsys_status

    ok, detail = nsys_status()
    lines.append(DoctorLine(name="nsys", status="ok" if ok else "missing", detail=detail,
                            fix="" if ok else "profile_reference falls back to torch.profiler"))
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    lines.append(DoctorLine(name="c++ compiler", status="ok" if cxx else "missing", detail=cxx or "",
                            fix="" if cxx else "required: install g++"))
    has_index = settings.index_dir.exists() and any(settings.index_dir.iterdir())
    lines.append(DoctorLine(name="docs index", status="ok" if has_index else "warning",
                            detail=str(settings.index_dir),
                            fix="" if has_index else "built on first search, or: stitch-mcp index build"))
    for mod in ("chromadb", "bm25s"):
        present = importlib.util.find_spec(mod) is not None
        lines.append(DoctorLine(name=mod, status="ok" if present else "missing",
                                fix="" if present else f"pip install {mod}"))
    lines.append(isolation_line())
    lines.append(DoctorLine(name="workspace", status="ok", detail=str(settings.db_path)))
    return DoctorReport(lines=lines)
