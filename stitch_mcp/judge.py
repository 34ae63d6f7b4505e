"""The judge: the trusted half of the run stage. It never imports candidate code.

It runs in a worker process of the server's (stitch_mcp.worker, stage "run"); the candidate runs
in a sandboxed room process (stitch_mcp.room) that the judge starts and talks to through one
typed door (stitch_mcp.door) and shared buffers (stitch_mcp.shared_tensors). Read top to bottom:

1. prepare   - start the room (its torch import overlaps ours), import the reference, make the
               first inputs, build the reference model, warm it up;
2. load      - the room imports the candidate and builds ModelNew; the reference's weights are
               copied in through shared buffers;
3. trials    - per trial the judge draws inputs from seeds it alone knows, copies them into the
               room's input buffers, asks for one call, clones the output buffers, compares them
               with its own reference run and with its private copy of the inputs;
4. findings  - what the trials show: input mutation, unwritten or constant output, non-tensor
               or aliased outputs, background threads and processes seen from outside;
5. timing    - every timed call gets inputs never used before; the judge's own clock brackets
               each call (and its own work between calls) and rejects room times it contradicts;
               some timed outputs are checked; then the room is closed and the reference timed
               here, in a process that never loaded candidate code.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import statistics
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp.compare import compare, failure_context, near_zero_exploit, tolerances
from stitch_mcp.correctness import (
    StageError,
    TimingInputs,
    bench_options,
    distribute,
    measure_baselines,
    perturb_weights,
)
from stitch_mcp.build_room import publish_build
from stitch_mcp.door import Arg, Attach, Batch, Call, LoadState, Run
from stitch_mcp.judge_room import RoomClient, RoomGone
from stitch_mcp.shared_tensors import Arena
from stitch_mcp.timing import L2_FLUSH_BYTES


@dataclass
class Prepared:
    """What the judge holds for the whole stage."""

    torch: Any
    device: str
    ref_mod: Any
    ref_model: Any
    init_args: list[Any]
    first_inputs: list[Any] | None
    templates: list[Any]
    atol: float
    rtol: float
    warm_finite: bool
    arena: Arena
    inputs: list[Any] = field(default_factory=list)  # [(spec, view) | None] per flattened input
    outputs: list[Any] = field(default_factory=list)  # [(spec, view) | None] per flattened output
    state: dict[str, Any] = field(default_factory=dict)  # name -> (spec, view)


def run_stage(spec: dict[str, Any]) -> dict[str, Any]:
    from stitch_mcp.events import stage

    res: dict[str, Any] = {"trials": [], "findings": [], "checks_run": [], "stage_seconds": {}, "notes": []}
    rooms: dict[str, RoomClient] = {}
    try:
        stage("import")
        rooms["candidate"] = RoomClient.start(spec, spec["candidate_source"])
        if spec.get("timing"):  # the eager baseline runs in a room of the same kind, beside it
            rooms["reference"] = RoomClient.start(spec, spec["reference_source"], model_class="Model")
        p = _prepare(spec, res)
        _judge(spec, res, p, rooms, stage)
    except StageError as exc:
        res["error"] = {"kind": exc.kind, "message": exc.message, **exc.extra}
    except RoomGone as exc:
        res["error"] = {"kind": exc.kind, "message": exc.message}
    except BaseException as exc:
        from stitch_mcp.crashes import classify_error_text

        found = classify_error_text(f"{type(exc).__name__}: {exc}")
        res["error"] = {"kind": found[0] if found else "internal",
                        "message": f"{type(exc).__name__}: {exc}"[:3000] + (f" — {found[1]}" if found else ""),
                        "traceback": traceback.format_exc()[-4000:]}
    finally:
        for r in rooms.values():
            r.close()
        if "candidate" in rooms:
            res["room"] = rooms["candidate"].describe()
    return res


def _judge(spec: dict[str, Any], res: dict[str, Any], p: Prepared, rooms: dict[str, RoomClient], stage) -> None:
    room = rooms["candidate"]
    lap = _lap(res["stage_seconds"])
    stage("candidate_import")
    _load_candidate(spec, res, p, room)  # imports, lazy builds, construction, a first call: no lease
    lap("load")
    with _device_lease(spec, res, stage):  # the GPU to ourselves: trials and timing
        lap("lease_wait")
        stage("correctness")
        facts = _trials(spec, res, p, room, stage)
        lap("correctness")
        stage("integrity")
        _trial_findings(res, p, facts)
        res["findings"] += room.process_findings()
        lap("integrity")
        clean = all(t["ok"] for t in res["trials"]) and not any(f["severity"] == "error" for f in res["findings"])
        if spec.get("timing") and clean:
            _timing(spec, res, p, rooms, stage)
            lap("timing")
    res["findings"] = list({f["code"]: f for f in reversed(res["findings"])}.values())[::-1]


def _timing(spec: dict[str, Any], res: dict[str, Any], p: Prepared, rooms: dict[str, RoomClient], stage) -> None:
    stage("timing", what="candidate and eager, interleaved")
    room, reference = rooms["candidate"], rooms["reference"]
    reference.load(spec, p.device, _plain_values(p.init_args))
    if p.state:
        _share_state(p, reference)
    with _one_core(p, rooms, res):
        timed = _time_rooms(spec, p, rooms)
        batches = None
        if _door_allowance(timed) > 0.1 * statistics.median(timed.candidate.room_ms):  # too short for one call's bracket
            stage("timing", what="batches of back-to-back calls")
            batches = _batch_bracket(p, rooms, timed)
    res["findings"] += room.process_findings()
    room.close()  # from here on nothing of the candidate runs
    alone = _time_alone(p, reference, len(timed.reference.room_ms) // 2)
    reference.close()
    _judge_times(res, p, timed, batches)
    _check_timed_outputs(res, p, timed)
    _physical_floor(res, p, timed, spec)
    _baselines(spec, res, p, stage, alone)


@contextlib.contextmanager
def _one_core(p: Prepared, rooms: dict[str, RoomClient], res: dict[str, Any]):
    """On a GPU, the judge and both rooms share one CPU core while they are timed (they take turns,
    never run at once): a call's host work (launches, the door) then runs equally fast in either
    room. On an H100 host two rooms' host work differed by up to 35% for a whole check, from the
    cores they had. Where the host does not let us pin the rooms, a note says so."""
    if p.device != "cuda" or not hasattr(os, "sched_setaffinity"):
        yield
        return
    import psutil

    own = os.sched_getaffinity(0)
    core = {psutil.Process().cpu_num()}
    os.sched_setaffinity(0, core)
    try:
        if not all(room.pin(core) for room in rooms.values()):
            res["notes"].append("timing: the rooms could not be pinned to the judge's CPU core on this host")
        yield
    finally:
        os.sched_setaffinity(0, own)


@contextlib.contextmanager
def _device_lease(spec: dict[str, Any], res: dict[str, Any], stage):
    """The device lock (stitch_mcp.devices), held for the trials and the timing only."""
    from stitch_mcp.devices import Gpu, acquire_device

    gpu = spec.get("lease_gpu")
    stage("waiting for the device")
    with acquire_device(gpus=[Gpu(**gpu)] if gpu else []) as lease:
        res["lease"] = {"label": lease.label, "waited_s": round(lease.waited_s, 3), "note": lease.note}
        try:
            yield lease
        finally:
            res["lease"]["window"] = [lease.acquired_at, time.time()]


def _lap(secs: dict[str, float]):
    t = [time.monotonic()]

    def lap(name: str) -> None:
        now = time.monotonic()
        secs[name] = round(secs.get(name, 0.0) + now - t[0], 4)
        t[0] = now

    return lap


# ------------------------------------------------------------------ 1. prepare


def _prepare(spec: dict[str, Any], res: dict[str, Any]) -> Prepared:
    import torch

    from stitch_mcp.loader import build_model, import_program, init_inputs, make_inputs

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    res["device"] = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    res["device_kind"] = device
    try:
        ref_mod = import_program(spec["reference_source"], "reference", Path.cwd())
    except BaseException as exc:
        raise StageError("reference_error", f"importing the reference failed: {type(exc).__name__}: {exc}") from None
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(ref_mod, need):
            raise StageError("reference_error", f"the reference defines no {need}")
    try:
        init_args = init_inputs(ref_mod)
        first = make_inputs(ref_mod, device, spec["plan"][0][0])
        ref_model = build_model(ref_mod.Model, init_args, device)
    except BaseException as exc:
        raise StageError("reference_error", f"the reference's get_inputs/get_init_inputs/Model failed: "
                                            f"{type(exc).__name__}: {exc}") from None
    with torch.no_grad():
        warm = _reference(ref_model, first)
    flat = integ.flatten(warm)
    templates = [o.to("meta") if isinstance(o, torch.Tensor) else o for o in flat]
    out_dtype = next((str(o.dtype).replace("torch.", "") for o in templates if isinstance(o, torch.Tensor)), "")
    atol, rtol = tolerances(out_dtype, spec)
    res["atol"], res["rtol"], res["output_dtype"] = atol, rtol, out_dtype
    finite = all(bool(torch.isfinite(o).all()) for o in flat
                 if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex()))
    p = Prepared(torch, device, ref_mod, ref_model, init_args, first, templates, atol, rtol, finite, Arena(device))
    p.inputs = p.arena.layout(integ.flatten(first))
    p.outputs = p.arena.layout(flat)
    return p


def _reference(ref_model, inputs: list[Any]):
    try:
        return ref_model(*integ.clone_inputs(inputs))
    except BaseException as exc:
        raise StageError("reference_error", f"reference forward raised {type(exc).__name__}: {exc}"[:3000]) from None


# ------------------------------------------------------------------ 2. load


def _load_candidate(spec: dict[str, Any], res: dict[str, Any], p: Prepared, room: RoomClient) -> None:
    init_args = _plain_values(p.init_args)
    loaded = room.load(spec, p.device, init_args, n_inputs=len(p.inputs))
    publish_build(room.workdir / "build", Path(spec["build_root"]))  # what it built on first use
    res["extensions"] = loaded.extensions
    res["stage_seconds"]["room_load"] = loaded.build_s
    own = p.ref_model.state_dict()
    names = [k for k, shape in loaded.state.items()
             if isinstance(own.get(k), p.torch.Tensor) and list(own[k].shape) == shape]
    res["copied_state"] = len(names)
    if names:
        slots = p.arena.layout([own[k] for k in names])
        p.state = {k: s for k, s in zip(names, slots) if s is not None}
        _share_state(p, room)
    # a first call before the lease: whatever the candidate compiles on first use (Triton's JIT,
    # a load_inline in forward) happens now; its outputs are not looked at
    from stitch_mcp.events import stage

    stage("first_call")
    _attach(p, room)
    room.call(Call(args=_put_inputs(p, p.first_inputs), outputs=[]))


def _plain_values(values: list[Any]) -> list[Any]:
    """get_init_inputs() as JSON: KernelBench's are numbers, tuples and strings."""
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.append(_plain_values(list(v)))
        elif isinstance(v, (bool, int, float, str)) or v is None:
            out.append(v)
        else:
            raise StageError("reference_error", f"get_init_inputs() returns a {type(v).__name__}; only numbers, "
                                                "strings and tuples of them can be passed to the candidate's room")
    return out


def _share_state(p: Prepared, room: RoomClient) -> None:
    own = p.ref_model.state_dict()
    with p.torch.no_grad():
        for name, (_, view) in p.state.items():
            view.copy_(own[name])
    _sync(p)
    _attach(p, room)
    room.ask(LoadState(tensors={name: spec for name, (spec, _) in p.state.items()}))


def _attach(p: Prepared, room: RoomClient) -> None:
    """Send the room the shared regions made since the last time (their fds ride along)."""
    regions, fds = p.arena.since(room.attached)
    if regions:
        room.ask(Attach(regions=regions), fds)
        room.attached += len(regions)


def _sync(p: Prepared) -> None:
    if p.device == "cuda":
        p.torch.cuda.synchronize()


# ------------------------------------------------------------------ 3. trials


@dataclass
class TrialFacts:
    mutated: list[int] = field(default_factory=list)
    aliased: list[int] = field(default_factory=list)
    unwritten: list[int] = field(default_factory=list)
    not_plain: list[str] = field(default_factory=list)
    fingerprints: list[tuple[Any, Any]] = field(default_factory=list)


def _trials(spec: dict[str, Any], res: dict[str, Any], p: Prepared, room: RoomClient, stage) -> TrialFacts:
    from stitch_mcp.loader import make_inputs

    facts = TrialFacts()
    for i, (seed, dist, weights) in enumerate(spec["plan"]):
        stage("correctness", trial=i)
        note = ""
        if weights == "reinit":
            why = _reinit(p, seed)
            if not why:
                _share_state(p, room)
            else:
                weights, note = "task", f"weights not re-initialised: {why}"
        inputs = p.first_inputs if i == 0 else make_inputs(p.ref_mod, p.device, seed)
        p.first_inputs = None
        inputs, dist, dist_note = _distribution(p, inputs, dist, seed)
        trial = {"trial": i, "seed": seed, "inputs": dist, "weights": weights}
        out, called = _candidate_call(p, room, inputs, facts, i)
        with p.torch.no_grad():
            ref_out = _reference(p.ref_model, inputs)
        result = _compare(out, ref_out, p)
        if i in facts.unwritten and not result["ok"]:
            result["problems"].append("some elements were never written (they still hold the poison value)")
        trial.update(result)
        if note or dist_note:
            trial["problems"] = [n for n in (note, dist_note) if n] + trial["problems"]
        trial["near_zero"] = near_zero_exploit(out, ref_out, p.atol)
        if not trial["ok"] and sum(not t["ok"] for t in res["trials"]) < 2 and not _has_described(out):
            # the first two failed trials (the reasons show two): the inputs they really used and the
            # reference's own rounding noise on them (a float64 run of the reference)
            trial.update(failure_context(p.ref_model, inputs, ref_out, out, p.atol, p.rtol))
        res["trials"].append(trial)
        facts.fingerprints.append((integ.fingerprint(integ.flatten(ref_out)[0]),
                                   integ.fingerprint(integ.flatten(out)[0])))
        del out, ref_out, inputs
    return facts


def _reinit(p: Prepared, seed: int) -> str:
    """Fresh weights in the reference, shared with the room; why not, when they cannot be."""
    own = p.ref_model.state_dict()
    if not own:
        return "the model has no parameters"
    missing = [k for k in own if k not in p.state]
    if missing:
        return f"ModelNew's parameters do not match Model's by name ({', '.join(missing[:3])})"
    perturb_weights(p.ref_model, seed)
    return ""


def _compare(out: Any, ref_out: Any, p: Prepared) -> dict[str, Any]:
    described = [(k, o) for k, o in enumerate(integ.flatten(out)) if isinstance(o, _Described)]
    if not described:
        return compare(out, ref_out, p.atol, p.rtol)
    refs = integ.flatten(ref_out)
    problems = []
    for k, o in described:
        r = refs[k] if k < len(refs) else None
        want = f"a {str(r.dtype).replace('torch.', '')} tensor of shape {tuple(r.shape)}" \
            if isinstance(r, p.torch.Tensor) else "no such output"
        problems.append(f"output {k} is {o!r}; the reference returns {want}")
    return {"ok": False, "max_abs_err": None, "max_rel_err": None, "mismatch_fraction": 1.0,
            "first_mismatch_index": None, "nan_count": 0, "inf_count": 0, "problems": problems}


def _distribution(p: Prepared, inputs: list[Any], dist: str, seed: int) -> tuple[list[Any], str, str]:
    if dist == "task":
        return inputs, dist, ""
    try:
        alt = distribute(inputs, dist, seed, p.device)
        with p.torch.no_grad():
            alt_ref = _reference(p.ref_model, alt)
        ok = all(bool(p.torch.isfinite(o).all()) for o in integ.flatten(alt_ref)
                 if isinstance(o, p.torch.Tensor) and (o.is_floating_point() or o.is_complex()))
        if ok or not p.warm_finite:
            return alt, dist, ""
        return inputs, "task", f"{dist} inputs make the reference non-finite; used the task's inputs"
    except StageError:
        return inputs, "task", f"the reference rejects {dist} inputs; used the task's inputs"


def _put_inputs(p: Prepared, inputs: list[Any], slots: list[Any] | None = None) -> list[Arg]:
    """Copy the inputs into the room's shared buffers (`slots`, by default the trials' own); the
    judge keeps `inputs` as they are."""
    args = []
    for value, slot in zip(integ.flatten(inputs), p.inputs if slots is None else slots):
        if slot is None or not isinstance(value, p.torch.Tensor):
            args.append(Arg(value=value if isinstance(value, (bool, int, float, str)) or value is None else None))
        else:
            spec, view = slot
            view.copy_(value)
            args.append(Arg(tensor=spec))
    return args


def _fill_poison(p: Prepared) -> None:
    for slot, t in zip(p.outputs, p.templates):
        if slot is not None:
            slot[1].copy_(integ.poisoned_like(t, p.device))


def _candidate_call(p: Prepared, room: RoomClient, inputs: list[Any], facts: TrialFacts, i: int):
    """One call in the room on a copy of `inputs`; the outputs as the judge's own tensors (cloned
    from the shared buffers; non-tensors from the reply; None where nothing usable came back)."""
    _attach(p, room)
    args = _put_inputs(p, inputs)
    _fill_poison(p)
    _sync(p)
    called = room.call(Call(args=args, outputs=[s[0] if s else None for s in p.outputs], poison=True))
    _sync(p)
    outs: list[Any] = []
    for k, meta in enumerate(called.outputs):
        slot = p.outputs[k] if k < len(p.outputs) else None
        if meta.kind != "tensor":
            outs.append(meta.value)
            continue
        if not meta.plain:
            facts.not_plain.append(f"output {k}: {meta.detail}")
        if meta.aliases_input:
            facts.aliased.append(i)
        if meta.copied and slot is not None:
            clone = slot[1].clone()
            if integ.unwritten_count(clone):
                facts.unwritten.append(i)
            outs.append(clone)
        else:  # the wrong shape or dtype: described, so compare() names the mismatch
            outs.append(_Described(meta))
    if any(not integ.same_bits(v, s[1]) for v, s in zip(integ.flatten(inputs), p.inputs)
           if s is not None and isinstance(v, p.torch.Tensor)):
        facts.mutated.append(i)
    return (outs[0] if len(outs) == 1 else tuple(outs)), called


def _has_described(out: Any) -> bool:
    return any(isinstance(o, _Described) for o in integ.flatten(out))


class _Described:
    """An output the judge could not read (wrong shape/dtype, not a plain tensor)."""

    def __init__(self, meta):
        self.meta = meta

    def __repr__(self) -> str:
        m = self.meta
        return f"a {m.dtype} tensor of shape {tuple(m.shape)} on {m.device}" + (f" ({m.detail})" if m.detail else "")


# ------------------------------------------------------------------ 4. findings


def _trial_findings(res: dict[str, Any], p: Prepared, facts: TrialFacts) -> None:
    f = integ.finding
    res["checks_run"] += ["input_mutation", "unwritten_output", "plain_tensor", "output_varies",
                          "tolerance_exploit", "background_processes"]
    if facts.mutated:
        res["findings"].append(f("input_mutation", f"the candidate modified its inputs in place (trials "
                                                   f"{facts.mutated}); write results to new tensors"))
    if facts.aliased:
        res["findings"].append(f("output_aliases_input", "an output shares storage with an input (a view or the "
                                                         "input itself); return a new tensor"))
    if facts.unwritten and not all(t["ok"] for t in res["trials"]):
        res["findings"].append(f(
            "unwritten_output", "part of the output was never written (it kept the poison value put into free "
            "memory); make every thread write its element and check the grid covers the output"))
    if facts.not_plain:
        res["findings"].append(f("tensor_subclass", "outputs must be plain dense torch.Tensors with storage: "
                                 + "; ".join(facts.not_plain[:3])))
    if any(t.get("near_zero") for t in res["trials"]):
        res["findings"].append(f(
            "tolerance_exploit", "the reference's output is within the tolerance of zero and the candidate's "
            "output does not follow it (it passes only because the tolerance is loose), e.g. a constant output",
            confidence="probable"))
    ref_fps = [r for r, _ in facts.fingerprints if r is not None]
    cand_fps = [c for _, c in facts.fingerprints if c is not None]
    if len(ref_fps) >= 2 and len(set(ref_fps)) > 1 and len(cand_fps) >= 2 and len(set(cand_fps)) == 1:
        res["findings"].append(f("constant_output", "the candidate returned the same output for different inputs "
                                                    "while the reference's changed: the output does not depend on "
                                                    "the input"))


# ------------------------------------------------------------------ 5. timing


@dataclass
class Lane:
    """One room's timed calls: its own times (untrusted for the candidate), the judge's wall time
    of each call, and the judge's own work after each call (fresh inputs, L2 flush, sync)."""

    room_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    after_ms: list[float] = field(default_factory=list)
    block_medians: list[float] = field(default_factory=list)


@dataclass
class Timed:
    reference: Lane
    candidate: Lane
    checked: dict[int, Any] = field(default_factory=dict)  # seed -> [(places, values)] kept of each output
    must_check: list[int] = field(default_factory=list)  # seeds whose samples are always compared
    out_bytes: int = 0
    in_bytes: int = 0


BLOCK = 5  # calls per room before switching: A/B/A/B in blocks


def _time_rooms(spec: dict[str, Any], p: Prepared, rooms: dict[str, RoomClient]) -> Timed:
    """The candidate's room (B) and the reference's room (A), timed in alternating blocks on the
    same fresh inputs (a seed drawn now for each call, never seen before by either room). The
    judge's clock brackets every call; some candidate outputs are cloned for checking, chosen
    after the call. Ends when both spreads are small, after `timing_iters` calls, or after 2 s."""
    torch = p.torch
    n_max = int(spec.get("timing_iters") or 100)
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=p.device) if p.device == "cuda" else None
    out_specs = [s[0] if s else None for s in p.outputs]
    t = Timed(Lane(), Lane())
    for room in rooms.values():
        _attach(p, room)
    started = time.monotonic()
    args, _ = _gap(p, flush, secrets.randbelow(2 ** 31 - 1))
    for which in ("reference", "candidate"):  # warm-up, untimed
        for _ in range(2):
            rooms[which].call(Call(args=args, outputs=out_specs, timed=True))
            args, _ = _gap(p, flush, secrets.randbelow(2 ** 31 - 1))
    while len(t.candidate.room_ms) < n_max:
        for which in ("reference", "candidate"):  # inputs of their own: nothing one room sees helps the other
            lane = getattr(t, which)
            for _ in range(BLOCK):
                seed = secrets.randbelow(2 ** 31 - 1)
                _timed_call(p, rooms[which], lane, seed, flush, out_specs)
                if which == "candidate":
                    _sample_outputs(p, t, seed)
            lane.block_medians.append(statistics.median(lane.room_ms[-BLOCK:]))
        n = len(t.candidate.room_ms)
        if n >= 10 and (max(_spread(t.candidate.room_ms), _spread(t.reference.room_ms)) < 0.02
                        or time.monotonic() - started > 2.0):
            break
    t.in_bytes = integ.tensor_bytes([s[1] for s in p.inputs if s is not None])
    return t


def _timed_call(p: Prepared, room: RoomClient, lane: Lane, seed: int, flush, out_specs) -> None:
    args, gap_ms = _gap(p, flush, seed)
    if lane.wall_ms:
        lane.after_ms.append(gap_ms)
    h0 = time.perf_counter()
    called = room.call(Call(args=args, outputs=out_specs, timed=True))
    lane.wall_ms.append((time.perf_counter() - h0) * 1e3)
    if called.room_ms is None or not called.room_ms >= 0:
        raise RoomGone("timing_forgery", "the room reported no time for a timed call")
    lane.room_ms.append(float(called.room_ms))


def _time_alone(p: Prepared, room: RoomClient, calls: int) -> Lane:
    """The reference's room timed again once the candidate's room is gone: the clean eager time."""
    flush = p.torch.empty(L2_FLUSH_BYTES // 4, dtype=p.torch.int32, device=p.device) if p.device == "cuda" else None
    out_specs = [s[0] if s else None for s in p.outputs]
    lane = Lane()
    for _ in range(max(calls, 10)):
        _timed_call(p, room, lane, secrets.randbelow(2 ** 31 - 1), flush, out_specs)
    return lane


def _gap(p: Prepared, flush, seed: int) -> tuple[list[Arg], float]:
    """The judge's own work between timed calls: fresh inputs into the shared buffers, the L2
    cache flushed, the device synchronised. Returns the call's arguments and how long it took."""
    from stitch_mcp.loader import make_inputs

    h0 = time.perf_counter()
    fresh = make_inputs(p.ref_mod, p.device, seed)
    args = _put_inputs(p, fresh)
    del fresh
    if flush is not None:
        flush.zero_()
    _sync(p)
    return args, (time.perf_counter() - h0) * 1e3


# The door's round trip is not the same for every room: on an H100 host (2026-11-24) it was
# 0.36-0.87 ms, and one room's differed from the other's by up to 30% for a whole check (which
# cores the two processes landed on). The per-call bracket allows for half of it.
DOOR_SPREAD = 0.5

# Calls shorter than that allowance are also timed in batches of back-to-back calls, each on
# inputs of its own and into output buffers of its own. A batch's time on the judge's clock, W(n),
# is one round trip plus n calls; the difference of two batch sizes cancels the round trip (the
# lowest W of several rounds for each size: interruptions only ever add). A batch of copies alone,
# in the reference's room, measures what the room adds around forward. A room cannot do a batch's
# calls faster than their real work (their outputs are sampled and checked), so the speedup over
# the reference in batches is one the judge has measured itself. Back-to-back calls do not hide
# the host work a call does after its last launch as single calls do, so the two speedups differ
# honestly; by more than BATCH_SLACK, the room's times are not believed.
BATCH_MS = 2.0  # the work of one batch: long beside the door's jitter
BATCH_CALLS = (16, 256)
BATCH_BYTES = 512 << 20  # inputs and outputs of one batch's calls, in shared buffers
BATCH_ROUNDS = 5
BATCH_SLACK = 1.5


@dataclass
class Batches:
    """Per-call times on the judge's clock from batches of back-to-back calls."""

    calls: int
    candidate_ms: float
    reference_ms: float
    copy_ms: float


def _door_allowance(t: Timed) -> float:
    """How far the per-call bracket may honestly be off: twice the spread of the door's overhead
    over sqrt(calls) (chance), or DOOR_SPREAD of the overhead itself (one room against another)."""
    overs = [w - r for w, r in zip(t.reference.wall_ms, t.reference.room_ms)]
    chance = 2 * _iqr(overs) / math.sqrt(min(len(overs), len(t.candidate.wall_ms)))
    return max(0.005, chance, DOOR_SPREAD * statistics.median(overs))


def _batch_bracket(p: Prepared, rooms: dict[str, RoomClient], t: Timed) -> Batches | None:
    """Both rooms timed in batches of k and k/4 calls, interleaved, on fresh inputs; two calls of
    each candidate batch, drawn after it, are always checked. None when a batch would not fit."""
    b_room = statistics.median(t.candidate.room_ms)
    k = int(min(max(BATCH_MS / max(b_room, 1e-4), BATCH_CALLS[0]), BATCH_CALLS[1],
                BATCH_BYTES // max(t.in_bytes + t.out_bytes, 1)))
    if k < BATCH_CALLS[0] // 2:
        return None
    ins = p.arena.layout([s[1] if s else None for s in p.inputs] * k)
    outs = p.arena.layout([o if isinstance(o, p.torch.Tensor) else None for o in p.templates] * k)
    for room in rooms.values():
        _attach(p, room)
    flush = p.torch.empty(L2_FLUSH_BYTES // 4, dtype=p.torch.int32, device=p.device) if p.device == "cuda" else None
    walls: dict[tuple[str, int], list[float]] = {}
    for _ in range(BATCH_ROUNDS):
        for n in (k // 4, k):
            calls, _ = _batch_calls(p, ins, outs, n)
            walls.setdefault(("reference", n), []).append(_run_batch(p, rooms["reference"], Batch(calls=calls), flush))
            walls.setdefault(("copy", n), []).append(
                _run_batch(p, rooms["reference"], Batch(calls=calls, forward=False), flush))
            calls, seeds = _batch_calls(p, ins, outs, n)
            walls.setdefault(("candidate", n), []).append(_run_batch(p, rooms["candidate"], Batch(calls=calls), flush))
            for j in [secrets.randbelow(n) for _ in range(2)]:
                n_out = len(outs) // k
                _sample_outputs(p, t, seeds[j], outs[j * n_out:(j + 1) * n_out])
                t.must_check.append(seeds[j])
    per_call = {lane: (min(walls[(lane, k)]) - min(walls[(lane, k // 4)])) / (k - k // 4)
                for lane in ("candidate", "reference", "copy")}
    return Batches(calls=k, candidate_ms=per_call["candidate"], reference_ms=per_call["reference"],
                   copy_ms=per_call["copy"])


def _batch_calls(p: Prepared, ins: list[Any], outs: list[Any], n: int) -> tuple[list[Call], list[int]]:
    """n calls, each with fresh inputs (a seed drawn now) in its own slice of the batch buffers."""
    from stitch_mcp.loader import make_inputs

    n_in, n_out = len(p.inputs), len(p.templates)
    calls, seeds = [], []
    for j in range(n):
        seeds.append(secrets.randbelow(2 ** 31 - 1))
        args = _put_inputs(p, make_inputs(p.ref_mod, p.device, seeds[-1]), ins[j * n_in:(j + 1) * n_in])
        calls.append(Call(args=args, outputs=[s[0] if s else None for s in outs[j * n_out:(j + 1) * n_out]]))
    return calls, seeds


def _run_batch(p: Prepared, room: RoomClient, batch: Batch, flush) -> float:
    """The judge's time of one batch: from asking for the run to its answer."""
    room.ask(batch)
    if flush is not None:
        flush.zero_()
    _sync(p)
    h0 = time.perf_counter()
    room.ask(Run())
    return (time.perf_counter() - h0) * 1e3


def _batch_bound(t: Timed, bb: Batches | None) -> tuple[float, dict[str, Any]]:
    """The candidate's per-call time the batches imply, where they contradict its room times
    (else 0.0), and what they measured."""
    if bb is None:
        return 0.0, {}
    info: dict[str, Any] = {"calls": bb.calls, "candidate_ms": bb.candidate_ms, "reference_ms": bb.reference_ms,
                            "copy_ms": bb.copy_ms}
    a_room, b_room = statistics.median(t.reference.room_ms), statistics.median(t.candidate.room_ms)
    a_fwd, b_fwd = bb.reference_ms - bb.copy_ms, bb.candidate_ms - bb.copy_ms
    if a_fwd < 0.1 * bb.reference_ms:  # forward lost in the room's own overhead: says nothing
        info["note"] = "not used: forward is too short beside the room's own work per call on this host"
        return 0.0, info
    verified = a_fwd / max(b_fwd, 1e-9)  # the speedup over the reference, on the judge's clock
    info["speedup"] = round(verified, 4)
    claimed = a_room / b_room if b_room > 0 else math.inf
    if claimed > BATCH_SLACK * verified:
        return a_room / verified, info
    return 0.0, info


SAMPLED = 4096  # elements of each output kept from every timed call, at places drawn after the call


def _sample_outputs(p: Prepared, t: Timed, seed: int, slots: list[Any] | None = None) -> None:
    """Keep SAMPLED elements of each output of this timed call (in `slots`, by default the trials'
    own buffers), at random places chosen now (after the room answered): every timed call can be
    checked, for the price of a gather."""
    torch = p.torch
    kept = []
    for slot in p.outputs if slots is None else slots:
        if slot is None or not slot[1].numel():
            kept.append(None)
            continue
        flat = slot[1].reshape(-1)
        idx = torch.randint(0, flat.numel(), (min(SAMPLED, flat.numel()),), device=flat.device,
                            generator=_sampling_generator(p, flat.device))
        kept.append((idx, flat[idx].clone()))
    t.checked[seed] = kept
    t.out_bytes = integ.tensor_bytes([s[1] for s in p.outputs if s is not None])


_generators: dict[str, Any] = {}


def _sampling_generator(p: Prepared, device) -> Any:
    key = str(device)
    if key not in _generators:
        _generators[key] = p.torch.Generator(device=device).manual_seed(secrets.randbelow(2 ** 63 - 1))
    return _generators[key]


def _spread(times: list[float]) -> float:
    med = statistics.median(times) if len(times) >= 4 else 0.0
    return _iqr(times) / med if med > 0 else 1.0


def _iqr(values: list[float]) -> float:
    if len(values) < 4:
        return max(values) - min(values) if values else 0.0
    q = statistics.quantiles(sorted(values), n=4, method="inclusive")
    return q[2] - q[0]


def _stats(times: list[float]) -> dict[str, float]:
    s = sorted(times)
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) >= 4 else [s[0], 0, s[-1]]
    mean = statistics.fmean(s)
    return {"median_ms": statistics.median(s), "iqr_ms": q[2] - q[0], "min_ms": s[0], "calls": len(s),
            "cv": statistics.pstdev(s) / mean if mean > 0 and len(s) > 1 else 0.0}


def _judge_times(res: dict[str, Any], p: Prepared, t: Timed, batches: Batches | None = None) -> None:
    """The candidate room's times stand only where the judge's clock agrees. The reference's room
    is the same kind of process doing the same kind of call at the same moments, so its wall time
    minus its own time is the door's honest overhead, and the judge's work after its calls is what
    that work costs when nothing is left running. Where the candidate's wall time minus that
    overhead (plus any slowdown of the judge's own work after its calls) exceeds its own times by
    more than the overhead's own jitter, the judge's estimate replaces them and a finding says so.
    For calls too short for that, `batches` (see BATCH_MS) bound the time from below."""
    a, b = t.reference, t.candidate
    b_room = statistics.median(b.room_ms)
    a_over = statistics.median([w - r for w, r in zip(a.wall_ms, a.room_ms)])
    noise = _door_allowance(t)
    bracket = statistics.median([w - a_over for w in b.wall_ms])
    a_after, b_after = statistics.median(a.after_ms or [0.0]), statistics.median(b.after_ms or [0.0])
    deferred = max(0.0, b_after - a_after - max(0.05, 0.25 * a_after))
    estimate = max(b_room, bracket) + deferred
    if estimate - b_room <= max(noise, 0.1 * estimate) and b_room > 0:  # within the door's jitter
        estimate = b_room
    batch_low, batch_info = _batch_bound(t, batches)
    estimate = max(estimate, batch_low)
    if b_room <= 0 and estimate <= 0:  # no work takes no time; too short for the judge to tell: as eager
        estimate = statistics.median(a.room_ms)
    cand = _stats(b.room_ms)
    cand["host_median_ms"] = statistics.median(b.wall_ms)
    res["timing"] = {"method": ("CUDA events in each program's room, checked against the judge's clock; eager "
                                "interleaved with the candidate in blocks of %d; fresh inputs and an L2 flush "
                                "before every call" % BLOCK if p.device == "cuda" else
                                "each room's perf_counter, checked against the judge's clock; eager interleaved "
                                "with the candidate in blocks of %d; fresh inputs every call" % BLOCK),
                     "candidate": cand, "eager": _stats(a.room_ms),
                     "eager_block_spread": _block_spread(a.block_medians),
                     "candidate_block_spread": _block_spread(b.block_medians),
                     "bracket": {"candidate_ms": bracket, "door_overhead_ms": a_over, "noise_ms": noise,
                                 "after_ms": b_after, "reference_after_ms": a_after}}
    if batch_info:
        res["timing"]["batch"] = batch_info
        res["timing"]["method"] += (f"; calls this short also timed in batches of {batches.calls} back-to-back "
                                    "calls on the judge's clock")
    res["checks_run"].append("timing_bracket")
    if estimate > b_room:
        scale = estimate / b_room if b_room > 0 else 1.0
        cand.update({k: cand[k] * scale for k in ("median_ms", "iqr_ms", "min_ms")} if b_room > 0 else
                    {"median_ms": estimate, "min_ms": estimate})
        why = (f"in batches of {batches.calls} back-to-back calls on the judge's clock it is "
               f"{batch_info['speedup']:.2f}x the reference, not the "
               f"{statistics.median(a.room_ms) / b_room if b_room > 0 else math.inf:.2f}x its room's times say "
               "(host work after its last launch also shows there)"
               if batches and estimate == batch_low else
               f"the judge's own work after each call took {b_after:.4f} ms instead of {a_after:.4f} ms: work "
               "went on after the room answered" if deferred else
               f"each call took {statistics.median(b.wall_ms):.4f} ms on the judge's clock, of which the door "
               f"itself takes {a_over:.4f} ms")
        res["findings"].append(integ.finding(
            "timing_contradicted", f"the room reported {b_room:.4f} ms per call but {why}; the candidate is timed "
            f"at the judge's estimate of {estimate:.4f} ms (work on an unjoined stream, deferred past the call, "
            "or forged times)", severity="warning", confidence="probable"))


def _block_spread(medians: list[float]) -> float:
    """Max/min of the per-block medians, minus 1: how much the time moved during the run."""
    return round(max(medians) / min(medians) - 1, 4) if medians and min(medians) > 0 else 0.0


CHECKED_CALLS = 16  # timed calls whose samples are compared with the reference, drawn after timing


def _check_timed_outputs(res: dict[str, Any], p: Prepared, t: Timed) -> None:
    """Compare the samples of up to CHECKED_CALLS timed calls, chosen at random once timing is over,
    and of the calls drawn from each batch, with the reference run on the same inputs."""
    from stitch_mcp.loader import make_inputs

    seeds = [s for s in t.checked if s not in t.must_check]
    chosen = t.must_check + [seeds.pop(secrets.randbelow(len(seeds))) for _ in range(min(CHECKED_CALLS, len(seeds)))]
    bad = []
    for seed in chosen:
        inputs = make_inputs(p.ref_mod, p.device, seed)
        with p.torch.no_grad():
            expected = integ.flatten(_reference(p.ref_model, inputs))
        for kept, ref in zip(t.checked[seed], expected):
            if kept is None or not isinstance(ref, p.torch.Tensor):
                continue
            idx, got = kept
            if not compare(got, ref.reshape(-1)[idx], p.atol, p.rtol)["ok"]:
                bad.append(seed)
                break
        del inputs, expected
    t.checked = {s: t.checked[s] for s in chosen}
    res["checks_run"].append("timed_outputs")
    if bad:
        res["findings"].append(integ.finding(
            "timed_output_mismatch", f"outputs of {len(bad)} of the {len(t.checked)} checked timed calls are wrong "
            "for the inputs they were given (results cached across calls, or work deferred past the call)"))


def _physical_floor(res: dict[str, Any], p: Prepared, t: Timed, spec: dict[str, Any]) -> None:
    """The roofline floor for the report (stitch_mcp.ceilings: bytes and, where profile_reference
    counted them, the reference's FLOPs) and the bound below which a time is impossible."""
    from stitch_mcp import ceilings

    nbytes = t.in_bytes + t.out_bytes
    res["timing"]["floor_bytes"] = nbytes
    fields, lowest = ceilings.timing_floors(p.device, nbytes, spec.get("flops"), spec.get("flops_dtype"),
                                            p.torch.backends.cuda.matmul.allow_tf32)
    res["timing"].update(fields)
    if lowest is None:
        return
    res["checks_run"].append("physical_floor")
    measured = res["timing"]["candidate"]["median_ms"]
    if measured < 0.9 * lowest.ms:
        res["findings"].append(integ.finding(
            "below_physical_floor", f"measured {measured:.4f} ms, below the physical floor of {lowest.ms:.4f} ms "
            f"({lowest.note}): impossible for honest work"))


def _baselines(spec: dict[str, Any], res: dict[str, Any], p: Prepared, stage, alone: Lane) -> None:
    """Eager: the interleaved time, or the reference's room timed alone after the candidate's room
    was ended where that is lower (slowing the reference's room down gains the candidate nothing).
    torch.compile: timed here, after the rooms are gone, and cached per task by check.py."""
    timing = res["timing"]
    alone_stats = _stats(alone.room_ms)
    if alone_stats["median_ms"] < timing["eager"]["median_ms"]:
        timing["eager_note"] = (f"eager timed {timing['eager']['median_ms']:.4g} ms beside the candidate and "
                                f"{alone_stats['median_ms']:.4g} ms alone; the lower is used")
        timing["eager"] = alone_stats
    if not spec.get("compare_compile"):
        return
    base = (spec.get("baselines_by_device") or {}).get(res.get("device", ""))
    if not base or not (base.get("compiled") or str(base.get("compile_note", "")).startswith("torch.compile failed")):
        stage("timing", what="torch.compile")
        inputs = TimingInputs(p.ref_mod, p.device, spec["timing_seeds"])
        base = measure_baselines(p.ref_model, inputs, bench_options(spec, p.device, inputs), True, stage)
        timing["clean_baselines"] = base  # check.py caches these for the task
    timing["baselines_cached"] = "clean_baselines" not in timing
    timing["compiled"], timing["compile_note"] = base.get("compiled"), base.get("compile_note", "")
