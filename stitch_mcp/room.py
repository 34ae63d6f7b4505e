"""The candidate room: the only process that imports candidate code (`python -m stitch_mcp.room`).

It runs sandboxed (stitch_mcp.sandbox), as another user, with no view of the judge, the server,
the workspace or the build cache beyond what it is given read-only. It does what the judge asks
through the door (stitch_mcp.door) and nothing else: import the candidate, build ModelNew, take
parameters and inputs from shared buffers, run forward, copy outputs into the judge's buffers, and
time calls on command. Nothing here is trusted: the judge validates every reply against its own
reference, its own copies and its own clock. The checks below (poisoning free memory, copying an
output on the current stream before synchronizing) only make an honest mistake show up clearly.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from stitch_mcp.door import (
    COMMANDS,
    PARSED_CALLS,
    Attach,
    Batch,
    Bye,
    Call,
    Called,
    Door,
    DoorClosed,
    Done,
    Failed,
    Load,
    Loaded,
    LoadState,
    OutputMeta,
    Ping,
    ReadState,
    Ready,
    Rehearse,
    Run,
)
from stitch_mcp.syscall_filter import restrict as restrict_syscalls

PROGRAM_MODULE = "candidate"


class _Room:
    def __init__(self, door: Door, cuda_ahead: bool = False):
        import torch

        from stitch_mcp.shared_tensors import Attached

        # fp32 as the judge's reference computes it (stitch_mcp.judge.prepare): without this, an
        # nn.Conv2d the candidate keeps would run with TF32 (cuDNN's default), errors 200-550x the
        # reference's own noise on an H100 and a fail at the strict tolerance. A candidate may still
        # turn TF32 on itself; the rubric sees it.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.torch, self.door = torch, door
        self.shared = Attached()
        self.views: dict[int, tuple[Call, list[Any], list[Any]]] = {}  # see _resolved
        self.model: Any = None
        self.device = "cpu"
        self.last_outputs: list[Any] = []
        self.ready_batch: tuple[list[Any], bool, bool] = ([], True, False)
        self.imported: tuple[Any, Any] | None = None  # (the model class, the build cache) of an import-only Load
        # CUDA's context made before any order, on the GPU of CUDA_VISIBLE_DEVICES (None: not made)
        self.cuda_ahead = (os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER")) \
            if cuda_ahead else None

    # -------------------------------------------------------------- commands

    def serve(self) -> None:
        handlers = {Attach: self.attach, Load: self.load, Rehearse: self.rehearse, LoadState: self.load_state,
                    ReadState: self.read_state, Call: self.call, Batch: self.batch, Run: self.run,
                    Ping: lambda m, f: Done()}
        while True:
            message, fds = self.door.receive()
            if isinstance(message, Bye):
                return
            try:
                reply = handlers[type(message)](message, fds)
            except _CandidateError as exc:
                reply = exc.failed
            except BaseException as exc:  # the room itself: report, the judge decides
                reply = _failure("room_error", exc)
            self.door.send(reply)

    def attach(self, message: Attach, fds: list[int]) -> Done:
        self.shared.attach(message.regions, fds)
        return Done()

    def load(self, message: Load, fds: list[int]) -> Loaded:
        from stitch_mcp.build.build_cache import BuildCache

        torch = self.torch
        if self.cuda_ahead is not None and message.device.startswith("cuda"):
            if self.cuda_ahead != (message.visible_devices, message.device_order):  # the judge takes only a match
                raise RuntimeError(f"this room's CUDA context is on {self.cuda_ahead}, the check's GPU is "
                                   f"{(message.visible_devices, message.device_order)}")
        elif message.visible_devices is not None:  # a spare room learns its GPU here, before CUDA starts
            os.environ["CUDA_VISIBLE_DEVICES"] = message.visible_devices
            if message.device_order:  # on a host of mixed GPUs CUDA's default order is not NVML's
                os.environ["CUDA_DEVICE_ORDER"] = message.device_order
        self.device = message.device
        cuda_s = _start_cuda(torch) if self.device.startswith("cuda") else 0.0
        t0 = time.monotonic()
        source = Path(message.program).read_text(encoding="utf-8")
        prebuilt = {key: f"/proc/self/fd/{fds[i]}" for key, i in message.prebuilt.items() if 0 <= i < len(fds)}
        cache = BuildCache(Path.cwd() / "build", source, allow_build=True, prebuilt=prebuilt)
        cache.install()
        try:
            module = _guarded("import", lambda: _import(source))
        except _CandidateError as exc:  # what was built (or compiled as far as this host allows) before it failed
            exc.failed.extra["extensions"] = cache.extensions
            raise
        t_import = time.monotonic() - t0
        cls = getattr(module, message.model_class, None)
        if cls is None:
            raise _CandidateError(Failed(error_kind="interface",
                                         message=f"the candidate defines no class {message.model_class}"))
        if not message.build_model:
            self.imported = (cls, cache)
            return Loaded(import_s=round(t_import, 3), build_s=round(t_import, 3), cuda_s=cuda_s,
                          extensions=cache.extensions)
        _check_interface(cls, message)
        from stitch_mcp.loader import build_model, built_tensors, value_digest

        with torch.no_grad():
            self.model = _guarded("init", lambda: build_model(cls, message.args(), self.device))
        own = built_tensors(torch, self.model)
        return Loaded(state={k: list(v.shape) for k, v in own.items()},
                      digests={k: value_digest(v) for k, v in own.items()},
                      import_s=round(t_import, 3), build_s=round(time.monotonic() - t0, 3),
                      cuda_s=cuda_s, extensions=cache.extensions)

    def rehearse(self, message: Rehearse, _fds) -> Loaded:
        """See door.Rehearse. Nothing is meant to reach a GPU here (no memory share, no lease is
        held): tensors are made on the meta device, and torch's CUDA is refused (_refuse_cuda)."""
        from stitch_mcp.loader import import_program

        torch = self.torch
        cls, cache = self.imported or (None, None)
        t0 = time.monotonic()
        model: list[Any] = []  # the model and its inputs, once constructed

        def construct() -> None:
            _refuse_cuda(torch)
            reference = import_program(message.reference_source, "reference", Path.cwd())
            with torch.device("meta"), torch.no_grad():
                model.append(cls(*reference.get_init_inputs()))
                model.append(reference.get_inputs())

        def call() -> None:
            with torch.device("meta"), torch.no_grad():
                model[0](*model[1])

        if cls is not None:
            try:
                _guarded("init", construct)
                _guarded("call", call)
            except _CandidateError as exc:
                # CUDA code built at construction that compiled as far as this host allows is the
                # build's outcome, as at import (the run stage would compile it again to say the
                # same); anything else is not a verdict: the meta device, a refused GPU, or a build
                # in forward on a path the real call may not take (meta is neither "cpu" nor "cuda")
                if exc.failed.error_kind == "needs_gpu" and len(model) < 2:
                    exc.failed.extra["extensions"] = cache.extensions
                    raise
        return Loaded(build_s=round(time.monotonic() - t0, 3), extensions=cache.extensions if cache else [])

    def load_state(self, message: LoadState, _fds) -> Done:
        with self.torch.no_grad():
            for own, shared in self._state_pairs(message.tensors):
                own.copy_(shared)
        return Done()

    def read_state(self, message: ReadState, _fds) -> Done:
        with self.torch.no_grad():
            for own, shared in self._state_pairs(message.tensors):
                shared.copy_(own)
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()  # the judge reads them once told
        return Done()

    def _state_pairs(self, tensors: dict[str, Any]) -> list[tuple[Any, Any]]:
        """(the model's tensor, its shared buffer) for each name the model has, at the buffer's shape."""
        own = self.model.state_dict()
        return [(own[name], self.shared.view(spec)) for name, spec in tensors.items()
                if isinstance(own.get(name), self.torch.Tensor) and list(own[name].shape) == spec.shape]

    def call(self, message: Call, _fds) -> Called:
        torch = self.torch
        args, targets = self._resolved(message)
        cuda = self.device.startswith("cuda")
        if cuda:  # the last call's outputs freed before this one's are made (6-8 GB each on KernelBench's level 1);
            # not on a CPU, where glibc could then give the poisoned blocks back to the system and the
            # candidate fresh zero pages (an unwritten output went unseen)
            self.last_outputs = []
        if message.poison:
            _poison_free_memory(targets, self.device)
        with torch.no_grad():
            if message.timed and cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                out = _guarded("call", lambda: self.model(*args))
                end.record()
            else:
                c0, h0 = time.thread_time(), time.perf_counter()
                out = _guarded("call", lambda: self.model(*args))
                h1, c1 = time.perf_counter(), time.thread_time()
            self.last_outputs = _flatten(torch, out)
            c2 = time.thread_time()
            metas = _copy_outputs(torch, self.last_outputs, targets, args)  # before any synchronize
            copy_cpu_ms = (time.thread_time() - c2) * 1e3
            if cuda:
                torch.cuda.synchronize()
            if message.release and cuda:
                out, self.last_outputs = None, []
                torch.cuda.empty_cache()
        room_ms = room_cpu_ms = None
        if message.timed:
            room_ms = start.elapsed_time(end) if cuda else (h1 - h0) * 1e3
            room_cpu_ms = None if cuda else (c1 - c0) * 1e3
        return Called(outputs=metas, room_ms=room_ms, room_cpu_ms=room_cpu_ms,
                      copy_cpu_ms=None if cuda else copy_cpu_ms)

    def _resolved(self, message: Call) -> tuple[list[Any], list[Any]]:
        """A call's arguments and output buffers as tensors. The views of a Call seen before (the
        door's reused message) are kept; the arguments are fresh aliases of them, so that a forward
        that changes its input tensor's shape in place (`x.squeeze_()`) changes only its own."""
        kept = self.views.get(id(message))
        if kept is None or kept[0] is not message:
            kept = (message, *self._views(message))
            if len(self.views) < PARSED_CALLS:
                self.views[id(message)] = kept
        args = [a.detach() if isinstance(a, self.torch.Tensor) else a for a in kept[1]]
        return args, kept[2]

    def _views(self, call: Call) -> tuple[list[Any], list[Any]]:
        """A call's arguments and output buffers as views of the shared regions."""
        view = self.shared.view
        return ([view(a.tensor) if a.tensor is not None else a.value for a in call.args],
                [view(o) if o is not None else None for o in call.outputs])

    def batch(self, message: Batch, _fds) -> Done:
        self.ready_batch = ([self._views(call) for call in message.calls], message.forward, message.passes)
        return Done()

    def run(self, _message: Run, _fds) -> Done:
        """The batch made ready, back to back; each output copied on the current stream. Without
        forward, the last outputs copied again; `passes`: first passed through a module call and
        what wraps forward (Batch)."""
        torch = self.torch
        calls, forward, passes = self.ready_batch
        passed = torch.nn.Identity() if passes else None
        with torch.no_grad():
            for args, targets in calls:
                if forward:
                    self.last_outputs = _flatten(torch, _guarded("call", lambda: self.model(*args)))
                elif passes:
                    self.last_outputs = _flatten(torch, _guarded("call", lambda: passed(self.last_outputs)))
                for out, target in zip(self.last_outputs, targets):
                    if target is not None and isinstance(out, torch.Tensor):
                        target.copy_(out)
            if self.device.startswith("cuda"):
                torch.cuda.synchronize()
        return Done()


class _CandidateError(Exception):
    def __init__(self, failed: Failed):
        super().__init__(failed.message)
        self.failed = failed


def _failure(kind: str, exc: BaseException) -> Failed:
    """A Failed reply; a CUDA error (which may surface at any later call) is named as such."""
    from stitch_mcp.crashes import classify_error_text

    tb = traceback.extract_tb(exc.__traceback__)
    line = next((f.lineno for f in reversed(tb) if f.filename.endswith(f"{PROGRAM_MODULE}.py")), None)
    message = f"{type(exc).__name__}: {exc}"[:3000]
    found = classify_error_text(message)
    if found:
        kind, message = found[0], f"{message} — {found[1]}"
    return Failed(error_kind=kind, message=message, line=line,
                  traceback="".join(traceback.format_exception(exc))[-6000:])


def _guarded(what: str, fn):
    """Run candidate code; its exceptions become a Failed reply naming what was being done."""
    from stitch_mcp.build.errors import BuildError, NeedsGPU

    try:
        return fn()
    except NeedsGPU as exc:
        raise _CandidateError(Failed(error_kind="needs_gpu", message=str(exc),
                                     extra={"diagnostics": exc.diagnostics})) from None
    except BuildError as exc:
        raise _CandidateError(Failed(error_kind="compile_error", message=str(exc),
                                     extra={"log": exc.text[-8000:], "diagnostics": exc.diagnostics})) from None
    except SyntaxError as exc:
        raise _CandidateError(Failed(error_kind="syntax_error", message=f"SyntaxError: {exc.msg} (line {exc.lineno})",
                                     line=exc.lineno)) from None
    except BaseException as exc:
        kind = {"import": "import_error", "init": "init_error", "call": "runtime_error"}[what]
        raise _CandidateError(_failure(kind, exc)) from None


def _check_interface(cls, message: Load) -> None:
    """The constructor and forward take what the reference's get_init_inputs() and get_inputs() give
    (a clear error here beats a TypeError from inside the first call)."""
    import inspect

    checks = [(cls, message.args(), "constructor", "get_init_inputs()", len(message.init_args))]
    forward = getattr(cls, "forward", None)
    if forward is None:
        raise _CandidateError(Failed(error_kind="interface", message=f"{message.model_class} has no forward method"))
    if message.n_inputs is not None:
        checks.append((forward, [None] * (message.n_inputs + 1), "forward", "get_inputs()", message.n_inputs))
    for fn, args, what, source, n in checks:
        try:
            inspect.signature(fn).bind(*args)
        except TypeError as exc:
            raise _CandidateError(Failed(error_kind="interface", message=(
                f"{message.model_class}'s {what} does not accept the reference's {source} ({n} argument(s)): "
                f"{exc}"))) from None
        except ValueError:  # no signature to read (a builtin): the call itself will tell
            pass


def _refuse_cuda(torch) -> None:
    """Before the rehearsal: torch's CUDA raises in this process from now on (a `.cuda()` in
    __init__, a tensor made on "cuda"), so the rehearsal allocates nothing on the card and runs no
    kernel there; a C++ wrapper given a meta tensor may still launch one through an untyped
    data_ptr() (0). The GPU's architecture, which extension builds need, is read through NVML and
    pinned in TORCH_CUDA_ARCH_LIST as the build cache names it (build.cache.cuda_arch). Where CUDA
    already started (at the candidate's import) there is nothing left to refuse."""
    if not torch.cuda.is_available() or torch.cuda.is_initialized():
        return
    try:
        import pynvml

        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        caps = sorted({tuple(pynvml.nvmlDeviceGetCudaComputeCapability(h)) for h in handles})
    except Exception:
        return
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", ";".join(f"{a}.{b}" for a, b in caps))

    def refused() -> None:
        raise RuntimeError("no GPU while the build stage rehearses the first call (on the meta device)")

    torch.cuda._lazy_init = refused


def _start_cuda(torch) -> float:
    """The room's CUDA context, made while the judge builds and warms up its reference (0.3 s on an
    H100 host) rather than in the first call, which the judge waits for. A candidate that sets CUDA's
    or the allocator's environment at import no longer changes this context: the room's environment
    is the judge's allow-list either way."""
    t0 = time.monotonic()
    torch.cuda.init()
    torch.cuda.synchronize()
    return round(time.monotonic() - t0, 3)


def _import(source: str):
    from stitch_mcp.loader import import_program

    return import_program(source, PROGRAM_MODULE, Path.cwd())


def _flatten(torch, value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(torch, v)]
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flatten(torch, value[k])]
    return [value]


def _copy_outputs(torch, outputs: list[Any], targets: list[Any], args: list[Any]) -> list[OutputMeta]:
    input_ptrs = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor) and a.numel()}
    metas = []
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor):
            value = o if isinstance(o, (bool, int, float, str)) or o is None else None
            metas.append(OutputMeta(kind=type(o).__name__, value=value))
            continue
        meta = OutputMeta(kind="tensor", shape=list(o.shape), dtype=str(o.dtype).replace("torch.", ""),
                          device=str(o.device))
        plain = type(o) is torch.Tensor or isinstance(o, torch.nn.Parameter)
        if not plain or o.layout != torch.strided or o.device.type == "meta":
            meta.plain, meta.detail = False, f"{type(o).__name__} with layout {o.layout} on {o.device}"
        elif o.numel():
            meta.aliases_input = o.untyped_storage().data_ptr() in input_ptrs
        target = targets[i] if i < len(targets) else None
        if meta.plain and target is not None and target.shape == o.shape and target.dtype == o.dtype:
            target.copy_(o)
            meta.copied = True
        metas.append(meta)
    return metas


def _poison_free_memory(targets: list[Any], device: str) -> None:
    """Allocate and free poisoned blocks of the outputs' sizes, so that an output the candidate
    allocates but never fully writes shows the poison (see integrity.POISON_BITS)."""
    from stitch_mcp.integrity import poison_free_memory

    poison_free_memory([t for t in targets if t is not None], device)


def main() -> int:
    restrict_syscalls()  # before any candidate code: kernel state a room could leave to the next
    door = Door.from_fd(int(os.environ.pop("STITCH_DOOR_FD")), COMMANDS, reuse_calls=True)
    import importlib

    import torch

    # what nearly every candidate imports, and the room's own loading: imported while the room waits
    # for its order rather than after it (0.2 s on a CPU host)
    for name in ("torch.utils.cpp_extension", "stitch_mcp.build.build_cache", "stitch_mcp.loader"):
        importlib.import_module(name)

    door.send(Ready(pid=os.getpid(), torch_version=torch.__version__))
    ahead = False
    if os.environ.pop("STITCH_ROOM_CUDA_AHEAD", "") == "1":  # a spare room on a known GPU (judge_room.prestart)
        try:
            _start_cuda(torch)
            ahead = True
        except Exception:  # as if not asked: its Load starts CUDA again and reports what fails there
            pass
    try:
        _Room(door, cuda_ahead=ahead).serve()
    except DoorClosed:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no candidate atexit handlers, no waiting on its threads


if __name__ == "__main__":
    sys.exit(main())
