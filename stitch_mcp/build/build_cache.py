"""`BuildCache`, which a candidate room installs in place of `torch.utils.cpp_extension`'s
`load_inline` and `load`, and records what each call did. A wrapped `load_inline`

- imports an extension the room was handed as an open file (`prebuilt`: built earlier for the
  same candidate source, copied into its cache scope by the trusted side, stitch_mcp.build_room);
- keys each extension by a hash of its sources, flags, options, torch/CUDA/Python versions, the
  compiler and the GPU architecture, and imports an already-built `.so` straight from the cache
  (`objects/<key>/`), so a resubmitted candidate costs no compile and no ninja run;
- otherwise builds in a *stable* directory keyed by the binding translation unit only (the
  `cpp_sources`, `functions`, flags and environment, not the CUDA kernel), under a module name
  derived from that key rather than the candidate's: when a candidate changes only its kernel,
  ninja finds `main.cpp` (the pybind binding that includes all of torch/extension.h) unchanged and
  recompiles only `cuda.cu`, whatever name the candidate gave its extension;
- serialises builds of one directory with an `flock` (released when a worker dies), so any `lock`
  file that cpp_extension left behind in a directory we hold is stale and is removed (a crashed
  build otherwise makes every later `load_inline` wait forever); a build that finds the stable
  directory busy builds in a directory of its own instead of waiting;
- compiles each unit on its ladder of headers (stitch_mcp.build.headers) and parses a failure
  into diagnostics on the candidate's own lines (stitch_mcp.build.diagnostics);
- without a CUDA-enabled torch (the CPU path) compiles the CUDA sources to objects only
  (stitch_mcp.build.compile), then stops with NeedsGPU; the check is cached like a build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.build.cache import _import_so, _lock_dir, _sha, _unlock, _write_atomically, env_fingerprint
from stitch_mcp.build.compile import _as_list, _compiled_message, compile_to_objects
from stitch_mcp.build.diagnostics import Generated, SourceMap, _failed_units, parse_diagnostics
from stitch_mcp.build.errors import BuildError, NeedsGPU
from stitch_mcp.build.headers import HeaderRungs
from stitch_mcp.build.host_headers import beyond_this_host


@dataclass
class _Inline:
    """One load_inline call: its bound arguments and sources, and where its build goes."""

    a: dict
    cpp: list[str]
    cuda: list[str]
    with_cuda: bool
    bind_key: str  # the binding unit, flags and environment: names the stable build directory and the module
    full_key: str  # all of it, the CUDA sources too: names the built object in the cache
    module_name: str
    objdir: Path
    record: dict  # what this call did, in BuildCache.extensions


class BuildCache:
    """Installed in a worker: records what each load_inline/load did."""

    def __init__(self, root: Path, candidate_source: str = "", candidate_file: str = "",
                 allow_build: bool = True, emit=None, prebuilt: dict[str, str] | None = None):
        self.root = Path(root)
        # extensions built earlier, by key: paths of their .so (in a candidate room, /proc/self/fd/N
        # of files the judge opened in the cache); anything else is built into `root`
        self.prebuilt = dict(prebuilt or {})
        self.smap = SourceMap(candidate_source)
        self.candidate_file = candidate_file
        self.allow_build = allow_build
        self.emit = emit
        self.extensions: list[dict] = []
        self.diagnostics: list[dict] = []
        self.log = ""
        self.orig_inline = None
        self.orig_load = None

    # -- installation
    def install(self) -> None:
        import torch.utils.cpp_extension as ce

        self.orig_inline, self.orig_load = ce.load_inline, ce.load
        cache = self

        def load_inline(*args, **kwargs):
            return cache.load_inline(*args, **kwargs)

        def load(*args, **kwargs):
            return cache.load(*args, **kwargs)

        load_inline.__doc__ = ce.load_inline.__doc__
        load.__doc__ = ce.load.__doc__
        ce.load_inline = load_inline
        ce.load = load

    # -- load_inline
    def load_inline(self, *args, **kwargs):
        import torch

        job = self._inline_job(args, kwargs)
        self.extensions.append(job.record)
        gpu_ok = torch.cuda.is_available() and torch.version.cuda is not None
        t0 = time.monotonic()
        module = self._cached_inline(job, gpu_ok, t0)
        if module is not None:
            return module
        if not self.allow_build:
            raise BuildError(f"extension '{job.a['name']}' is not built")
        if self.emit:
            self.emit("building", name=str(job.a["name"]), key=job.full_key)
        module = self._build_inline(job, gpu_ok, t0)
        job.record["seconds"] = round(time.monotonic() - t0, 3)
        return module

    def _inline_job(self, args, kwargs) -> _Inline:
        """load_inline's arguments, bound as cpp_extension binds them, and the keys of its build."""
        import inspect

        bound = inspect.signature(self.orig_inline).bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        cpp = _as_list(a["cpp_sources"])
        cuda = _as_list(a["cuda_sources"])
        if _as_list(a.get("sycl_sources")):
            raise BuildError("sycl_sources are not supported")
        with_cuda = bool(cuda) if a["with_cuda"] is None else bool(a["with_cuda"])
        options = {k: a[k] for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
                                     "with_cuda", "is_python_module", "with_pytorch_error_handling",
                                     "no_implicit_headers")}
        env = env_fingerprint(with_cuda)
        bind_key = _sha("inline", cpp, a["functions"], options, env)
        full_key = _sha(bind_key, cuda)[:40]
        module_name = f"st_{bind_key[:16]}"
        record = {"name": str(a["name"]), "key": full_key, "module": module_name, "cached": False,
                  "seconds": 0.0, "with_cuda": with_cuda}
        return _Inline(a, cpp, cuda, with_cuda, bind_key, full_key, module_name, self.root / "objects" / full_key,
                       record)

    def _cached_inline(self, job: _Inline, gpu_ok: bool, t0: float):
        """The extension built earlier (handed to the room, or in the cache), imported; None when
        it is to be built. A CUDA extension on a machine that cannot run it raises NeedsGPU, also
        when only its compile-only check is cached."""
        name, objdir = job.a["name"], job.objdir
        if job.full_key in self.prebuilt:
            location = Path(self.prebuilt[job.full_key])
        elif (objdir / "done").exists() and (objdir / f"{job.module_name}.so").exists():
            location = objdir
        elif (objdir / "compiled").exists() and job.with_cuda and not gpu_ok:
            job.record["cached"] = True
            said = (objdir / "compiled").read_text().strip()  # what the check found (older caches: "ok")
            raise NeedsGPU(f"{said if said != 'ok' else _compiled_message(name, '')} (checked earlier)")
        else:
            return None
        job.record["cached"] = True
        if job.with_cuda and not gpu_ok:
            raise NeedsGPU(f"extension '{name}' is CUDA code (compiled earlier); running it needs a GPU")
        module = _import_so(job.module_name, location)
        job.record["seconds"] = round(time.monotonic() - t0, 3)
        return module

    def _build_inline(self, job: _Inline, gpu_ok: bool, t0: float):
        """Build in the stable directory of the binding's key (or in one of our own while another
        build holds it) and publish the .so into the cache; without a CUDA torch, only compile a
        CUDA extension to objects, cache what that found and raise NeedsGPU."""
        bind, full = job.bind_key[:32], job.full_key[:12]
        stable = self.root / "work" / bind
        fd = _lock_dir(self.root / "locks" / f"{bind}.lock", blocking=False)
        if fd is None:  # another build holds the stable directory: build on our own
            stable = self.root / "work" / f"{bind}-{full}"
            fd = _lock_dir(self.root / "locks" / f"{bind}-{full}.lock", blocking=True)
        try:
            stable.mkdir(parents=True, exist_ok=True)
            stale = stable / "lock"
            if stale.exists():  # we hold the flock: nobody else is building here
                stale.unlink()
            self._register_generated(stable, job.cpp, job.cuda, job.a["functions"], job.a)
            if job.with_cuda and not gpu_ok:
                lacks = self._compile_only(stable, job.module_name, job.cpp, job.cuda, job.a)
                message = _compiled_message(job.a["name"], lacks)
                job.objdir.mkdir(parents=True, exist_ok=True)
                _write_atomically(job.objdir / "compiled", message)  # the compile-only check, cached
                job.record["seconds"] = round(time.monotonic() - t0, 3)
                raise NeedsGPU(message, self.diagnostics)
            module = self._build_on_rungs(job, stable)
            self._publish(stable, job.module_name, job.objdir)
        finally:
            _unlock(fd)
        return module

    def _build_on_rungs(self, job: _Inline, stable: Path):
        """cpp_extension's build with each unit on its lightest header rung; a unit that fails for
        lack of a torch declaration climbs a rung and the build runs again."""
        import torch

        a = job.a
        kwargs = dict(a)
        kwargs.update(name=job.module_name, build_directory=str(stable), verbose=False)
        module = None
        rungs = HeaderRungs(self.root, job.cpp, job.cuda, job.with_cuda)
        # cpp_extension names a rebuild with other flags `<name>_v1` (a module of the first
        # name may be imported already); a failed build imported nothing, and the published
        # .so must define PyInit_<module_name>: each rung builds under the same name
        versions = getattr(torch.utils.cpp_extension, "JIT_EXTENSION_VERSIONER", None)
        while module is None:
            job.record.update(rungs.labels())
            if versions is not None:
                versions.entries.pop(job.module_name, None)
            try:
                module = self.orig_inline(**dict(
                    kwargs, extra_cflags=[*_as_list(a["extra_cflags"]), *rungs.include_flags("binding")],
                    extra_cuda_cflags=[*_as_list(a["extra_cuda_cflags"]), *rungs.include_flags("kernel")]))
            except (RuntimeError, ImportError, OSError, subprocess.SubprocessError) as exc:
                climbed = rungs.climb(_failed_units(str(exc)))
                if not climbed:
                    raise self._build_error(a["name"], str(exc)) from None
                if self.emit:  # it uses something only a fuller header declares
                    self.emit("building", name=str(a["name"]), key=job.full_key, headers=climbed)
        return module

    def _register_generated(self, directory: Path, cpp: list[str], cuda: list[str], functions, a) -> None:
        implicit = not a.get("no_implicit_headers")
        pieces, kinds = [], []
        if implicit:
            pieces.append("#include <torch/extension.h>")
            kinds.append("implicit")
        pieces += cpp
        kinds += ["source"] * len(cpp)
        if functions is not None:
            names = [functions] if isinstance(functions, str) else list(functions)
            pieces.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
            kinds.append("binding")
            for n in names:
                pieces.append(f'm.def("{n}", ...);')
                kinds.append("binding")
            pieces.append("}")
            kinds.append("binding")
        self.smap.add(Generated(str(directory / "main.cpp"), pieces, kinds))
        if cuda:
            cpieces = (["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
                       if implicit else [])
            ckinds = ["implicit"] * len(cpieces)
            self.smap.add(Generated(str(directory / "cuda.cu"), cpieces + cuda, ckinds + ["source"] * len(cuda)))

    def _build_error(self, name: str, text: str) -> "BuildError":
        """cpp_extension's failure text, logged and parsed into diagnostics on the candidate's lines."""
        self.log += text
        diags = parse_diagnostics(text, self.smap)
        self.diagnostics.extend(diags)
        return BuildError(f"building extension '{name}' failed", text, diags)

    def _publish(self, stable: Path, module_name: str, objdir: Path) -> None:
        sos = sorted(stable.glob(f"{module_name}*.so"), key=lambda p: p.stat().st_mtime)
        if not sos:
            return
        tmp = objdir.with_name(objdir.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        shutil.copy2(sos[-1], tmp / f"{module_name}.so")
        (tmp / "done").write_text("ok")
        try:
            os.replace(tmp, objdir)
        except OSError:  # someone published the same key first
            shutil.rmtree(tmp, ignore_errors=True)

    def _compile_only(self, directory: Path, module_name: str, cpp: list[str], cuda: list[str], a) -> str:
        """No CUDA torch here: compile the generated sources to objects for real diagnostics,
        against the CUDA headers this host has and stand-ins for the rest (`host_cuda_headers`).
        Returns what this host lacks when that stopped the check short of the end ('' when both
        units compiled); raises BuildError on an error of the candidate's own."""
        units = compile_to_objects(self.root, directory, module_name, cpp, cuda, a)
        self.extensions[-1].update(units.labels)
        text = "".join(units.outputs.values())
        self.log += text
        diags = parse_diagnostics(text, self.smap)
        if not any(units.codes.values()):
            self.diagnostics.extend(diags)
            return ""
        lacks = beyond_this_host(units.failed_output(), units.stood_in)
        if not lacks:
            self.diagnostics.extend(diags)
            raise BuildError(f"building extension '{a['name']}' failed", text, diags)
        # e.g. the candidate calls cuBLAS and this host has no cuBLAS headers: no fault of the
        # candidate's, and nothing past it can be checked here (its other code compiled)
        for d in diags:
            if d["severity"] == "error":
                d.update(severity="note", message=f"not checked on this host (it lacks the CUDA library): {d['message']}")
        self.diagnostics.extend(diags)
        headers, names = [n for n in lacks if n.endswith(".h")], [n for n in lacks if not n.endswith(".h")]
        return " and ".join([f"the CUDA library headers {', '.join(headers)}"] * bool(headers)
                            + [f"the CUDA library headers that declare {', '.join(names[:6])}"] * bool(names))

    # -- load (sources are files)
    def load(self, *args, **kwargs):
        import inspect

        import torch

        bound = inspect.signature(self.orig_load).bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        sources = _as_list(a["sources"])
        contents = []
        for s in sources:
            try:
                contents.append(Path(s).read_text(errors="replace"))
            except OSError:
                contents.append(s)
        with_cuda = any(s.endswith((".cu", ".cuh")) for s in sources) if a["with_cuda"] is None else a["with_cuda"]
        options = {k: a[k] for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
                                     "with_cuda", "is_python_module", "is_standalone")}
        name = str(a["name"])  # in the key: the .so exports PyInit_<name> (a random name per process is common)
        key = _sha("load", name, [Path(s).name for s in sources], contents, options, env_fingerprint(with_cuda))[:40]
        record = {"name": name, "key": key, "module": name, "cached": False, "seconds": 0.0, "with_cuda": with_cuda}
        self.extensions.append(record)
        if with_cuda and not (torch.cuda.is_available() and torch.version.cuda):
            raise NeedsGPU(f"extension '{name}' is CUDA code; building and running it needs a GPU")
        module_like = a["is_python_module"] and not a["is_standalone"]  # a PyInit_<name> module, importable alone
        if key in self.prebuilt and module_like:  # built by the build stage's room (build_room._rehearse)
            try:
                module = _import_so(name, Path(self.prebuilt[key]))
                record["cached"] = True
                return module
            except ImportError:  # not what its key says: built again below
                pass
        directory = self.root / "work" / f"load-{key}"
        directory.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        fd = _lock_dir(self.root / "locks" / f"load-{key}.lock", blocking=True)
        try:
            if (directory / "lock").exists():
                (directory / "lock").unlink()
            record["cached"] = any(directory.glob(f"{name}*.so"))
            a.update(build_directory=str(directory), verbose=False)
            try:
                module = self.orig_load(**a)
            except (RuntimeError, ImportError, OSError, subprocess.SubprocessError) as exc:
                raise self._build_error(name, str(exc)) from None
            objdir = self.root / "objects" / key
            objdir.mkdir(parents=True, exist_ok=True)
            built = [p for p in (directory / f"{name}.so", *directory.glob(f"{name}.*.so")) if p.is_file()]
            if built and module_like:  # published with the rest (build_room.publish_build), handed to later rooms
                shutil.copy2(built[0], objdir / f"{name}.so")
            (objdir / "done").write_text("ok")
        finally:
            _unlock(fd)
        record["seconds"] = round(time.monotonic() - t0, 3)
        return module
