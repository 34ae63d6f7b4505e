"""Compiling load_inline's generated files outside cpp_extension's build: the two files it
generates (`generated_sources`), the commands that compile them to objects as its build would
(`compile_only_commands`), each unit climbing its ladder of headers (`compile_on_rungs`, for the
wrapper corpus and its benchmark; `compile_to_objects`, the CPU host's compile-only check of a
CUDA extension, which reports real compiler diagnostics before it stops with NeedsGPU).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stitch_mcp.build.cache import cuda_arch
from stitch_mcp.build.headers import HeaderRungs
from stitch_mcp.build.host_headers import host_cuda_headers


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v]


UNIT_FILES = {"binding": "main.cpp", "kernel": "cuda.cu"}


def _binding(a: dict) -> list[str]:
    functions = a.get("functions")
    if functions is None:
        return []
    names = [functions] if isinstance(functions, str) else list(functions)
    wrap = a.get("with_pytorch_error_handling", True)
    lines = ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
    for n in names:
        fn = f"torch::wrap_pybind_function({n})" if wrap else n
        lines.append(f'm.def("{n}", {fn}, "{n}");')
    lines.append("}")
    return lines


def generated_sources(cpp: list[str], cuda: list[str], a: dict) -> dict[str, str]:
    """The two files load_inline generates: {'binding': main.cpp, 'kernel': cuda.cu}."""
    implicit = not a.get("no_implicit_headers")
    main = "\n".join((["#include <torch/extension.h>"] if implicit else []) + cpp + _binding(a))
    cu = "\n".join((["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
                    if implicit else []) + cuda)
    return {"binding": main, "kernel": cu}


def compile_only_commands(module_name: str, a: dict, extra_flags: list[str]) -> dict[str, list[str]]:
    """The commands that compile load_inline's two generated files to objects, as cpp_extension's
    build would (its include paths, defines and nvcc flags), with no link: {'binding': host
    compiler on main.cpp, 'kernel': nvcc on cuda.cu}. A rung's -I folder goes at the end."""
    import sysconfig

    import torch.utils.cpp_extension as ce

    incs = [*ce.include_paths(), sysconfig.get_paths()["include"], *(a.get("extra_include_paths") or [])]
    inc_flags = [f for p in incs for f in ("-isystem", p)] + extra_flags
    defs = [f"-DTORCH_EXTENSION_NAME={module_name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    arch = cuda_arch().split(";")[0].replace(".", "").replace("sm_", "")
    return {
        "binding": [os.environ.get("CXX", "c++"), "-c", "main.cpp", "-o", "main.o", "-fPIC", "-std=c++17", *defs,
                    *inc_flags, *_as_list(a.get("extra_cflags"))],
        "kernel": ["nvcc", "-c", "cuda.cu", "-o", "cuda.cuda.o", "-std=c++17", f"-arch=sm_{arch}",
                   "--compiler-options", "-fPIC", *ce.COMMON_NVCC_FLAGS, *defs, *inc_flags,
                   *_as_list(a.get("extra_cuda_cflags"))],
    }


@dataclass
class UnitCompile:
    """One compile of one translation unit on one rung."""

    label: str
    ok: bool
    wall_s: float
    cpu_s: float  # user + system time of the compiler and its subprocesses
    output: str


def _timed_compile(cmd: list[str], directory: Path) -> tuple[bool, float, float, str]:
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode == 0, time.monotonic() - t0, usage.ru_utime + usage.ru_stime, output


def compile_on_rungs(root: Path, directory: Path, unit: str, sources: list[str], functions=None,
                     which: str = "ladder") -> list[UnitCompile]:
    """Compile one of load_inline's generated files to an object, as the CPU path does (the
    candidate's `sources` are its cpp_sources for unit 'binding', its cuda_sources for 'kernel'):
    which='ladder' climbs as a build does (stopping at the first rung that compiles, or that fails
    for a reason of the candidate's own), 'every' compiles on every rung, 'full' only on the real
    torch/extension.h. For the wrapper corpus (tests/programs/wrappers) and its benchmark."""
    cpp, cuda = (list(sources), []) if unit == "binding" else ([], list(sources))
    a = {"functions": functions}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / UNIT_FILES[unit]).write_text(generated_sources(cpp, cuda, a)[unit])
    cmd = compile_only_commands("st_rungs", a, host_cuda_headers(root).flags)[unit]
    rungs = HeaderRungs(root, cpp, cuda)
    last = len(rungs.ladders[unit]) - 1
    if which == "full":
        rungs.step[unit] = last
    runs = []
    while True:
        ok, wall, cpu, output = _timed_compile(cmd + rungs.include_flags(unit), directory)
        runs.append(UnitCompile(rungs.labels()[f"{unit}_header"], ok, round(wall, 2), round(cpu, 2), output))
        if which == "every" and rungs.step[unit] < last:
            rungs.step[unit] += 1
        elif which == "every" or ok or not rungs.climb({unit: output}):
            return runs


@dataclass
class UnitsCompiled:
    """Both of an extension's units compiled to objects on the CPU path: each unit's compiler
    output and exit status on the rung it ended on, what those rungs are, and the CUDA library
    headers that stood in for this host's missing ones."""

    outputs: dict[str, str]
    codes: dict[str, int]
    labels: dict[str, str]
    stood_in: list[str]

    def failed_output(self) -> str:
        return "".join(self.outputs[u] for u in self.outputs if self.codes[u])


def compile_to_objects(root: Path, directory: Path, module_name: str, cpp: list[str], cuda: list[str],
                       a: dict) -> UnitsCompiled:
    """No CUDA torch here: compile the generated sources to objects, both units at once, against
    the CUDA headers this host has and stand-ins for the rest (`host_cuda_headers`); a unit that
    fails for lack of a torch declaration climbs a rung and compiles again."""
    for unit, text in generated_sources(cpp, cuda, a).items():
        (directory / UNIT_FILES[unit]).write_text(text)
    host = host_cuda_headers(root)
    cmds = compile_only_commands(module_name, a, host.flags)
    rungs = HeaderRungs(root, cpp, cuda)
    codes, outs = {}, {}

    def compile_units(units) -> None:
        procs = {u: subprocess.Popen(cmds[u] + rungs.include_flags(u), cwd=directory, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True) for u in units}
        for u, proc in procs.items():
            outs[u], codes[u] = proc.communicate()[0], proc.returncode

    compile_units(cmds)
    while any(codes.values()):
        moved = rungs.climb({u: outs[u] for u in cmds if codes[u]})
        if not moved:
            break
        compile_units(moved)
    return UnitsCompiled(outs, codes, rungs.labels(), host.stood_in)


def _compiled_message(name: str, lacks: str) -> str:
    """What a compile-only check of a CUDA extension found (the NeedsGPU message, also cached)."""
    if lacks:
        return (f"extension '{name}' is CUDA code; this machine lacks {lacks}, so it was compiled only as far as "
                "that allows; building and running it needs a GPU machine")
    return f"extension '{name}' compiled; it is CUDA code and running it needs a GPU"
