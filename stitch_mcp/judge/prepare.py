"""Preparing the judge's side of a run stage (1) and loading the candidate into its room (2).

`Prepared` is what the judge holds for the whole stage: the reference model and its first
inputs, the output templates and tolerances, and the shared buffers (`RoomBuffers`) each room reads its
inputs from and writes its outputs into. The helpers at the end copy inputs and weights into those
buffers and hand a room the new ones; trials and timing use them alike.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp.build_room import publish_build
from stitch_mcp.compare import output_tolerances, tolerances
from stitch_mcp.correctness import StageError
from stitch_mcp.door import Arg, Attach, Call, Loaded, LoadState, ReadState
from stitch_mcp.judge_room import RoomClient
from stitch_mcp.loader import built_tensors, value_digest
from stitch_mcp.shared_tensors import Arena
from stitch_mcp.stage_results import BuiltExtension, valid_records


@dataclass
class RoomBuffers:
    """The shared regions one room maps (stitch_mcp.shared_tensors): slots for its inputs and its
    outputs, and for the candidate's room its weights. On a CPU each room has regions of its own: a
    room that maps the other's can take their pages away between the other's calls (punching holes
    with fallocate or madvise, which a sealed memfd allows), so that the other's every call faults
    them in again. On a GPU both rooms map one set: no importer can take pages from an allocation
    of the CUDA driver's, and memory is what limits the largest tasks there (gpu_memory.COPIES). A
    room that writes into the reference's inputs while it runs slows eager's single calls beside
    it, which the reference's room timed alone undoes (judge.timing.eager_agrees); eager's batches
    on the judge's clock are timed alone too where they checked the candidate's claim
    (judge.timing.eager_batches_alone). Each room's own buffers rely on the rooms' own uids (a room
    at sandbox level "none" can open another process's descriptors through /proc)."""

    arena: Arena
    inputs: list[Any] = field(default_factory=list)  # [(spec, view) | None] per flattened input
    outputs: list[Any] = field(default_factory=list)  # [(spec, view) | None] per flattened output


@dataclass
class WeightShare:
    """One way of giving ModelNew's tensors Model's values (_share_weights): which of them get which
    (and, in the one that only diagnoses, which get back the values ModelNew built them with)."""

    state: dict[str, Any] = field(default_factory=dict)  # ModelNew's name -> (spec, view), in the candidate's buffers
    state_from: dict[str, str] = field(default_factory=dict)  # ModelNew's name -> Model's, where they differ
    state_ties: dict[str, str] = field(default_factory=dict)  # Model's name -> the one of equal values shared
    as_built: dict[str, Any] = field(default_factory=dict)  # ModelNew's name -> its own values as built (on the CPU)

    def held(self) -> set[str]:
        """Model's names whose values ModelNew's tensors get, ties included (trials._reinit)."""
        held = {self.state_from.get(k, k) for k in self.state}
        return held | {k for k, stand in self.state_ties.items() if stand in held}


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
    tols: list[tuple[float, float]] = field(default_factory=list)  # (atol, rtol) per flattened output
    buffers: dict[str, RoomBuffers] = field(default_factory=dict)  # by room (RoomClient.role)
    weights: WeightShare = field(default_factory=WeightShare)  # the one in use
    weights_untried: list[WeightShare] = field(default_factory=list)  # the others, for a failed trial to fall back to
    weights_as_built: WeightShare | None = None  # where names hold values of ModelNew's own: a diagnosis only
    model_digests: dict[str, str] = field(default_factory=dict)  # Model's tensors as built (before its warm call)
    perturbed: bool = False  # a trial re-initialised ref_model's weights (restore_weights)
    ref_writes_inputs: bool = True  # the reference changed its inputs in place: it gets copies of them
    ref_aliases_inputs: bool = False  # an output of the reference's is (a view of) one of its inputs
    compiled_ahead: Any = None  # correctness.Compiled: torch.compile compiled before the check's share

    @property
    def inputs(self) -> list[Any]:
        """The candidate's input slots (the trials')."""
        return self.buffers["candidate"].inputs

    @property
    def outputs(self) -> list[Any]:
        """The candidate's output slots (the trials')."""
        return self.buffers["candidate"].outputs

    def of(self, room: RoomClient) -> RoomBuffers:
        return self.buffers[room.role]

    @property
    def out_bytes(self) -> int:
        """One set of outputs."""
        return integ.tensor_bytes(self.templates)


def prepare(spec: dict[str, Any], res: dict[str, Any], hold: contextlib.ExitStack,
            rooms: dict[str, RoomClient]) -> Prepared:
    """The reference imported, its first inputs made, its model built and warmed up. On a GPU the
    check's share of the card's memory is entered into `hold` before anything is allocated there.
    The rooms are asked to load their programs as soon as that share is held: they import, start
    CUDA and build their models while the judge starts CUDA and builds and warms up its reference."""
    import torch

    from stitch_mcp.loader import build_model, make_inputs

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"  # through NVML: CUDA has not started yet
    ref_mod = _reference(spec)
    init_args = _init_args(ref_mod)
    ahead = None
    if device == "cuda":
        ahead = _compile_ahead(torch, spec, res, ref_mod, init_args, rooms)
        _hold_memory(torch, spec, res, hold, ref_mod, init_args, rooms)
    # on the meta device (warm in a spare worker; on the CPU path its first use would cost more than it saves)
    counted = _input_count(torch, ref_mod) if device == "cuda" else None
    if counted is not None:
        _send_loads(rooms, device, init_args, counted)
    t0 = time.monotonic()
    res["device"] = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    res["device_kind"] = device
    res["stage_seconds"]["judge_cuda_init"] = round(time.monotonic() - t0, 4)
    try:
        first = make_inputs(ref_mod, device, spec["plan"][0][0])
        ref_model = ahead[0] if ahead else build_model(ref_mod.Model, init_args, device)
    except BaseException as exc:
        _raise_out_of_memory(exc)
        raise StageError("reference_error", f"the reference's get_inputs/get_init_inputs/Model failed: "
                                            f"{type(exc).__name__}: {exc}") from None
    if counted is None:
        _send_loads(rooms, device, init_args, len(integ.flatten(first)))
    elif counted != len(integ.flatten(first)):
        raise StageError("reference_error", f"the reference's get_inputs() returns {counted} inputs on the meta "
                                            f"device and {len(integ.flatten(first))} on {device}")
    built = {k: value_digest(v) for k, v in built_tensors(torch, ref_model).items()}  # before a BatchNorm's call
    with torch.no_grad():
        copies = integ.clone_inputs(first)
        warm = reference_output(ref_model, copies, clone=False)
        writes_inputs = any(isinstance(a, torch.Tensor) and not integ.same_bits(a, b)
                            for a, b in zip(integ.flatten(copies), integ.flatten(first)))
        aliases_inputs = bool(integ.storages(warm) & integ.storages(copies))
        del copies
    flat = integ.flatten(warm)
    templates = [o.to("meta") if isinstance(o, torch.Tensor) else o for o in flat]
    tensors = [o for o in templates if isinstance(o, torch.Tensor)]
    floating = [o for o in tensors if o.is_floating_point() or o.is_complex()]
    out_dtype = str((floating or tensors)[0].dtype).replace("torch.", "") if tensors else ""  # the one reported
    atol, rtol = tolerances(out_dtype, spec)
    res["atol"], res["rtol"], res["output_dtype"] = atol, rtol, out_dtype
    finite = all(bool(torch.isfinite(o).all()) for o in flat
                 if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex()))
    p = Prepared(torch, device, ref_mod, ref_model, init_args, first, templates, atol, rtol, finite,
                 tols=output_tolerances(templates, spec),
                 ref_writes_inputs=writes_inputs, ref_aliases_inputs=aliases_inputs,
                 compiled_ahead=ahead[1] if ahead else None, model_digests=built)
    shared = None
    for room in rooms.values():
        if shared is None or device != "cuda":
            shared = RoomBuffers(Arena(device))
            shared.inputs, shared.outputs = shared.arena.layout(integ.flatten(first)), shared.arena.layout(flat)
        p.buffers[room.role] = shared
    return p


def _reference(spec: dict[str, Any]):
    from stitch_mcp.loader import import_program

    try:
        ref_mod = import_program(spec["reference_source"], "reference", Path.cwd())
    except BaseException as exc:
        raise StageError("reference_error", f"importing the reference failed: {type(exc).__name__}: {exc}") from None
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(ref_mod, need):
            raise StageError("reference_error", f"the reference defines no {need}")
    return ref_mod


def _hold_memory(torch, spec: dict[str, Any], res: dict[str, Any], hold: contextlib.ExitStack, ref_mod,
                 init_args: list[Any], rooms: dict[str, RoomClient]) -> None:
    """The check's share of the card's memory (stitch_mcp.gpu_memory), held until `hold` ends. A
    check that must wait for it first puts rooms without a CUDA context in place of any that made
    theirs ahead (judge_room.prestart): it holds none outside its share while it waits."""
    from stitch_mcp.events import stage
    from stitch_mcp.gpu_memory import BATCH_BYTES, estimate_need, held

    t0 = time.monotonic()
    need_bytes = None if spec.get("whole_card") else \
        estimate_need(torch, ref_mod, init_args, BATCH_BYTES if spec.get("timing") else 0)
    res["stage_seconds"]["memory_estimate"] = round(time.monotonic() - t0, 4)
    res["memory"] = hold.enter_context(held(spec.get("lease_gpu"), need_bytes, stage,
                                            on_wait=lambda: _rooms_without_cuda(rooms)))
    res["stage_seconds"]["memory_wait"] = res["memory"].get("waited_s", 0.0)


def _rooms_without_cuda(rooms: dict[str, RoomClient]) -> None:
    try:
        for name, room in rooms.items():
            rooms[name] = room.without_cuda()
    except Exception as exc:
        raise StageError("internal", f"starting rooms for the check failed: {type(exc).__name__}: {exc}") from None


def _compile_ahead(torch, spec: dict[str, Any], res: dict[str, Any], ref_mod, init_args: list[Any],
                   rooms: dict[str, RoomClient]):
    """Where this judge times torch.compile's baseline (check.py's `compile_in_judge`): the reference
    built and compiled now, before the check's share of memory, holding only what compiling takes
    and not the device (correctness.compile_beside); (model, Compiled), else None. It is timed
    after the candidate's rooms have ended (judge.timing.baselines). Out of memory beside other
    checks (their use is estimated too), it is left to the timing, within the check's own share.
    Its share also holds the rooms' CUDA contexts where they made them ahead (as the check's does)."""
    from stitch_mcp.correctness import CompileCrashed, compile_beside, free_cuda_cache
    from stitch_mcp.events import stage
    from stitch_mcp.devices import ROOM_CONTEXT_BYTES
    from stitch_mcp.gpu_memory import compile_need, out_of_memory

    if not spec.get("compile_in_judge") or spec.get("whole_card"):
        return None  # not for a check judged again with the whole card
    need = compile_need(torch, ref_mod, init_args)
    if need is None:
        return None  # nor for one whose need is not known: compiling would hold the whole card
    need += ROOM_CONTEXT_BYTES * sum(room.cuda_ahead is not None for room in rooms.values())
    t0 = time.monotonic()
    try:
        ahead = compile_beside(spec, torch, ref_mod, init_args, "cuda", stage, need_of=lambda *_: need,
                               on_wait=lambda: _rooms_without_cuda(rooms), seconds=res["stage_seconds"])
    except CompileCrashed as exc:  # check.py judges the candidate again without it
        raise StageError("compile_baseline_crashed", str(exc)) from None
    except StageError:  # the rooms could not be replaced (_rooms_without_cuda): not the reference's
        raise
    except BaseException as exc:
        if not out_of_memory(f"{type(exc).__name__} {exc}"):
            raise StageError("reference_error", f"the reference's get_inputs/get_init_inputs/Model failed: "
                                                f"{type(exc).__name__}: {exc}") from None
        ahead = None
    res["stage_seconds"]["compile_ahead"] = round(time.monotonic() - t0, 4)
    if ahead is None or (ahead[1].model is None and out_of_memory(ahead[1].note)):
        free_cuda_cache()
        res["notes"].append("torch.compile's baseline ran out of GPU memory while compiling beside other checks: "
                            "compiled within this check's own share instead")
        return None
    return ahead


def _input_count(torch, ref_mod) -> int | None:
    """How many inputs get_inputs() makes, known before any of them is (the candidate's Load needs
    it); None where get_inputs does not run on the meta device (e.g. it calls .cuda())."""
    try:
        with torch.device("meta"):
            return len(integ.flatten(list(ref_mod.get_inputs())))
    except Exception:
        return None


def _send_loads(rooms: dict[str, RoomClient], device: str, init_args: list[Any], n_inputs: int) -> None:
    for name, room in rooms.items():
        room.send_load(device, plain_values(init_args), n_inputs=n_inputs if name == "candidate" else None)


def _init_args(ref_mod) -> list[Any]:
    from stitch_mcp.loader import init_inputs

    try:
        return init_inputs(ref_mod)
    except BaseException as exc:
        raise StageError("reference_error", f"the reference's get_init_inputs failed: {type(exc).__name__}: {exc}") from None


def reference_output(ref_model, inputs: list[Any], clone: bool = True):
    """The reference's output; on copies of `inputs` unless `clone` is False (the judge's own inputs,
    which a reference that leaves its inputs alone can read directly: one copy of every input fewer
    on the card, 6-8 GB for KernelBench's level-1 tasks)."""
    try:
        return ref_model(*(integ.clone_inputs(inputs) if clone else inputs))
    except BaseException as exc:
        _raise_out_of_memory(exc)
        raise StageError("reference_error", f"reference forward raised {type(exc).__name__}: {exc}"[:3000]) from None


def _raise_out_of_memory(exc: BaseException) -> None:
    """Running out of memory is not the reference's fault: the rooms load beside the judge (a
    candidate may take the card's memory at import), so it goes up as it is, classified as
    `cuda_oom` (and judged again with the card to itself: check.py)."""
    if type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower():
        raise exc


def load_candidate(spec: dict[str, Any], res: dict[str, Any], p: Prepared, room: RoomClient) -> Call:
    """The candidate's room's answer to the Load that `prepare` sent, its weights shared, and a
    first call sent (returned: `room.answer` waits for it)."""
    loaded = room.loaded()
    publish_build(room.workdir / "build", Path(spec["build_root"]))  # what it built on first use
    res["extensions"] = [e.model_dump() for e in valid_records(BuiltExtension, loaded.extensions)]  # the room's account
    res["stage_seconds"]["room_load"] = loaded.build_s
    res["stage_seconds"]["room_cuda"] = loaded.cuda_s
    _share_weights(p, room, loaded)
    res["copied_state"] = len(p.weights.state)
    if p.weights.state:
        share_state(p, room)
    # a first call before the lease: whatever the candidate compiles on first use (Triton's JIT,
    # a load_inline in forward) happens now; its outputs are not looked at
    from stitch_mcp.events import stage

    stage("first_call")
    attach(p, room)
    first = Call(args=put_inputs(p, p.first_inputs), outputs=[], release=True)
    room.send(first)
    return first


def _share_weights(p: Prepared, room: RoomClient, loaded: Loaded) -> None:
    """Which of ModelNew's tensors get which of Model's values (p.weights), and the other ways a
    failed trial falls back to (p.weights_untried, trials.run_trials); each holds every one of
    Model's tensors that its name holds, so that a weight frozen, cached or changed at construction
    gets Model's values and shows:
    - where tensors of Model's names hold another of Model's values as built (found by value, then
      read back: the room's digests only say which to read), that one, the rest by name: a
      candidate that builds its `fc2` first and applies it first is KernelBench-correct, and failed
      every trial with the weights by name (red team, 2026-11-27). Only where it still holds every
      name: a room could otherwise unhold a weight it keeps frozen by showing a copy of another;
    - by names alone: right for a ModelNew that builds its layers in another order, or a module of
      their shape first, and applies them by name.
    Where tensors of Model's names hold values of ModelNew's own as built, a third way leaves them so
    (p.weights_as_built), as KernelBench would: not for a verdict (a room could keep its own values
    slightly off Model's and compute otherwise once given them), only to tell a candidate that
    changes its weights at construction (folds a divisor into its conv) why it fails."""
    own = built_tensors(p.torch, p.ref_model)
    names = [k for k, shape in loaded.state.items() if k in own and list(own[k].shape) == shape]
    moved, differ = _as_built(own, names, loaded.digests, p.model_digests)
    slots: dict[tuple, Any] = {}  # one buffer per tensor of ModelNew's, whichever way uses it
    shares = []
    if moved:
        by_value = _share(p, room, own, loaded, [k for k in names if k not in moved], {}, slots)
        held = {own[k].data_ptr() for k in by_value.held() if k in own}
        if all(own[k].data_ptr() in held for k in moved):
            shares.append(by_value)
    shares.append(_share(p, room, own, loaded, names, {}, slots))
    p.weights, p.weights_untried = shares[0], shares[1:]
    if differ:  # what the room built, read before Model's values are loaded over it
        read = _read_back(p, room, {k: own[k] for k in differ}, slots)
        built = {k: view.to("cpu", copy=True) for k, (_, view) in read.items()}
        p.weights_as_built = _share(p, room, own, loaded, [k for k in names if k not in moved + differ], built, slots)
        p.weights_as_built.state.update(read)


def _share(p: Prepared, room: RoomClient, own: dict[str, Any], loaded: Loaded, by_name: list[str],
           as_built: dict[str, Any], slots: dict[tuple, Any]) -> WeightShare:
    """`by_name` shared by name, `as_built` given back the values ModelNew built them with, the rest
    found by value."""
    share = WeightShare(state=_slots(p, room, {k: own[k] for k in by_name}, slots), as_built=as_built)
    _match_by_value(p, room, share, own, {k: v for k, v in loaded.state.items() if k not in as_built}, slots)
    return share


def _slots(p: Prepared, room: RoomClient, like: dict[str, Any], slots: dict[tuple, Any]) -> dict[str, Any]:
    """A buffer in the candidate's room for each name, shaped as its template, from `slots` where
    one was made for it already."""
    keys = {k: (k, tuple(t.shape), t.dtype) for k, t in like.items()}
    new = [k for k in like if keys[k] not in slots]
    for k, slot in zip(new, p.of(room).arena.layout([like[k] for k in new]) if new else []):
        slots[keys[k]] = slot
    return {k: slots[keys[k]] for k in like if slots.get(keys[k]) is not None}


def _read_back(p: Prepared, room: RoomClient, like: dict[str, Any], slots: dict[tuple, Any]) -> dict[str, Any]:
    """ModelNew's tensors of these names, as they are in the room now, in buffers (_slots) the
    judge reads once the room has written them (door.ReadState)."""
    read = _slots(p, room, like, slots)
    attach(p, room)
    room.ask(ReadState(tensors={k: spec for k, (spec, _) in read.items()}))
    sync(p)
    return read


def _as_built(own: dict[str, Any], names: list[str], digests: dict[str, str],
              model: dict[str, str]) -> tuple[list[str], list[str]]:
    """Of the names ModelNew shares with Model, those whose tensor as built (by the room's digest)
    differs from Model's of that name as built: those that look like another of Model's tensors of
    varied values, and the others."""
    differ = [k for k in names if k in digests and digests[k] != model.get(k)]
    if not differ:
        return [], []
    others = {model.get(k) for k, v in own.items() if v.numel() and not is_constant(v)}
    return [k for k in differ if digests[k] in others], [k for k in differ if digests[k] not in others]


def _match_by_value(p: Prepared, room: RoomClient, share: WeightShare, own: dict[str, Any],
                    shapes: dict[str, list[int]], slots: dict[tuple, Any]) -> None:
    """Where some of Model's tensors share no name with ModelNew's: ModelNew's other tensors that
    hold one of Model's values as built (a renamed module built from the same seed, a copy it keeps
    beside it) are shared from it too (share.state, share.state_from). Before, a renamed candidate
    that kept a private copy of the task's weights passed the trial with re-initialised weights, and
    so did one keeping a second copy beside a renamed one (red team, 2026-11-27).
    - Values that are one number throughout (a LayerNorm's ones, a bias's zeros) say nothing of
      which tensor they are: a candidate's own mask of ones was given a LayerNorm's new weights, and
      one LayerNorm stood for two (red team). Only tensors of varied values are matched.
    - Model's parameters of equal varied values (one weight under two names, as a tied head) stand
      for each other (share.state_ties): the trial gives them all the same new values. Where a buffer,
      which that trial leaves as it is, holds them too, which holder is which is unknown: none is
      shared. Where ModelNew has fewer holders of those values than Model has parameters of them
      (two Linears seeded alike, two identity matrices), one stands for several: each holder gets
      one, and the others keep the task's values, which such a candidate then fails on."""
    torch = p.torch
    tensors = {k: v for k, v in own.items() if isinstance(v, torch.Tensor) and v.numel()}
    if all(k in share.state or is_constant(v) for k, v in tensors.items()):  # the common case: all shared by name
        return
    tensors = {k: v for k, v in tensors.items() if not is_constant(v)}
    groups: dict[str, list[str]] = {}
    like: dict[tuple, Any] = {}  # by shape: one of Model's tensors, the template of a buffer to read into
    for k, v in tensors.items():
        groups.setdefault(value_digest(v), []).append(k)
        like.setdefault(tuple(v.shape), v)
    asked = [k for k, shape in shapes.items() if k not in share.state and tuple(shape) in like]
    if not asked:
        return
    read = _read_back(p, room, {k: like[tuple(shapes[k])] for k in asked}, slots)
    params = {prm.data_ptr() for prm in p.ref_model.parameters()}  # a tied weight's every name included
    found = {}
    for name, (spec, view) in read.items():
        same = [k for k in groups.get(value_digest(view), []) if torch.equal(tensors[k], view)]
        if same and all(tensors[k].data_ptr() in params for k in same):
            found[name] = ((spec, view), tuple(same))
    held, holders = share.held(), Counter(same for _, same in found.values())
    free: dict[tuple, list[str]] = {}
    for name, (slot, same) in found.items():
        apart = list({tensors[k].data_ptr(): k for k in reversed(same)}.values())[::-1]  # a name per storage
        if holders[same] >= len(apart):
            stand = next((k for k in same if k in held), same[0])
            share.state_ties.update({k: stand for k in same if k != stand and k not in share.state})
        else:  # fewer holders than parameters of these values: one stands for several (red team, 4th round)
            left = free.setdefault(same, [k for k in apart if k not in held])
            stand = left.pop(0) if left else same[0]
        share.state[name], share.state_from[name] = slot, stand


def is_constant(t: Any) -> bool:
    """Every element the same number."""
    flat = t.detach().reshape(-1)
    return bool((flat == flat[0]).all())


def warm_reference(p: Prepared, room: RoomClient) -> None:
    """A first call of the reference's room (timing's eager baseline), loaded since `prepare`, on its
    own copy of the first inputs (the candidate's call may have written to the buffers), before the
    lease. Its weights are its own: built from the seed the judge's were, never through a buffer
    the candidate's room can write to."""
    attach(p, room)
    room.call(Call(args=put_inputs(p, p.first_inputs, p.of(room).inputs), outputs=[], release=True))  # idle until timing


def restore_weights(p: Prepared, room: RoomClient) -> None:
    """The task's weights in the judge's reference and the candidate's room again after a trial
    re-initialised them (trials.run_trials), so that both rooms are timed on the same weights."""
    if p.perturbed:
        from stitch_mcp.loader import build_model

        compiled = p.compiled_ahead.model if p.compiled_ahead is not None else None
        if getattr(compiled, "_orig_mod", None) is p.ref_model:  # torch.compile's wraps this very model
            fresh = build_model(p.ref_mod.Model, p.init_args, p.device)
            with p.torch.no_grad():
                p.ref_model.load_state_dict(fresh.state_dict())  # in place: both are timed on the task's weights
            fresh = None
        else:
            p.ref_model = None  # freed before the new one is made
            p.ref_model = build_model(p.ref_mod.Model, p.init_args, p.device)
        p.perturbed = False
        share_state(p, room)


def plain_values(values: list[Any]) -> list[Any]:
    """get_init_inputs() as JSON: KernelBench's are numbers, tuples and strings; tasks written
    elsewhere pass a torch.Size or a dtype too. Those are tagged ({"tuple": [...]}, {"size": [...]},
    {"dtype": "float16"}), for the room to build them again (door.Load.args)."""
    import torch

    out: list[Any] = []
    for v in values:
        if isinstance(v, torch.Size):
            out.append({"size": list(v)})
        elif isinstance(v, torch.dtype):
            out.append({"dtype": str(v).removeprefix("torch.")})
        elif isinstance(v, tuple):
            out.append({"tuple": plain_values(list(v))})
        elif isinstance(v, list):
            out.append(plain_values(v))
        elif isinstance(v, (bool, int, float, str)) or v is None:
            out.append(v)
        else:
            raise StageError("reference_error", f"get_init_inputs() returns a {type(v).__name__}; only numbers, "
                                                "strings, dtypes, torch.Size and tuples of them can be passed to the "
                                                "candidate's room")
    return out


def share_state(p: Prepared, room: RoomClient) -> None:
    own, w = p.ref_model.state_dict(), p.weights
    with p.torch.no_grad():
        for name, (_, view) in w.state.items():
            view.copy_(w.as_built[name] if name in w.as_built else own[w.state_from.get(name, name)])
    sync(p)
    attach(p, room)
    room.ask(LoadState(tensors={name: spec for name, (spec, _) in w.state.items()}))


def attach(p: Prepared, room: RoomClient) -> None:
    """Send the room its shared regions made since the last time (their fds ride along)."""
    regions, fds = p.of(room).arena.since(room.attached)
    if regions:
        room.ask(Attach(regions=regions), fds)
        room.attached += len(regions)


def free_cached(p: Prepared, room_needs: int) -> None:
    """Give the judge's cached GPU memory back to the driver where less than `room_needs` bytes are
    free before a room allocates: the judge's caching allocator keeps its high-water mark (the
    reference's intermediates, a trial's copies), and on an 8 GB-input task on an 80 GB H100 a room
    found 7 GB free for an 8 GB output. Only then: giving back and allocating again cost a 6 GB-input
    check 0.18 s."""
    if p.device == "cuda" and p.torch.cuda.mem_get_info()[0] < room_needs:
        p.torch.cuda.empty_cache()


def sync(p: Prepared) -> None:
    if p.device == "cuda":
        p.torch.cuda.synchronize()

def put_inputs(p: Prepared, inputs: list[Any], slots: list[Any] | None = None) -> list[Arg]:
    """Copy the inputs into a room's shared buffers (`slots`, by default the candidate's, the trials'
    own); the judge keeps `inputs` as they are."""
    args = []
    for value, slot in zip(integ.flatten(inputs), p.inputs if slots is None else slots):
        if slot is None or not isinstance(value, p.torch.Tensor):
            args.append(Arg(value=value if isinstance(value, (bool, int, float, str)) or value is None else None))
        else:
            spec, view = slot
            view.copy_(value)
            args.append(Arg(tensor=spec))
    return args
