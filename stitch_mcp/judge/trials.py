"""The trials (3) and what they show (4).

Per trial the judge draws inputs from seeds it alone knows, copies them into the room's input
buffers, asks for one call, clones the output buffers and compares them with its own reference
run and with its private copy of the inputs. The findings read what the trials saw: input
mutation, unwritten or constant output, non-tensor or aliased outputs, tolerance exploits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp.compare import compare, failure_context, near_zero_exploit
from stitch_mcp.correctness import StageError, distribute, perturb_weights
from stitch_mcp.door import Call
from stitch_mcp.judge.prepare import (
    Prepared,
    WeightShare,
    attach,
    free_cached,
    is_constant,
    put_inputs,
    reference_output,
    share_state,
    sync,
)
from stitch_mcp.judge_room import RoomClient
from stitch_mcp.loader import value_digest


@dataclass
class TrialFacts:
    mutated: list[int] = field(default_factory=list)
    aliased: list[int] = field(default_factory=list)
    unwritten: list[int] = field(default_factory=list)
    not_plain: list[str] = field(default_factory=list)
    # per trial, per output: (the reference's fingerprint, the candidate's)
    fingerprints: list[list[tuple[Any, Any]]] = field(default_factory=list)
    weights_unreached: bool = False  # Model has parameters, and no tensor of ModelNew holds any of them
    weights_kept: list[str] = field(default_factory=list)  # Model's parameters of varied values none holds
    mutated_otherwise: list[int] = field(default_factory=list)  # trials whose inputs it left unlike the reference


def run_trials(spec: dict[str, Any], res: dict[str, Any], p: Prepared, room: RoomClient, stage) -> TrialFacts:
    from stitch_mcp.loader import make_inputs

    facts = TrialFacts()
    for i, (seed, dist, weights) in enumerate(spec["plan"]):
        stage("correctness", trial=i)
        note = ""
        if weights == "reinit":
            done, note, facts.weights_kept = _reinit(p, seed)
            if done:
                share_state(p, room)
            else:
                weights = "task"
                facts.weights_unreached = next(p.ref_model.parameters(), None) is not None
        inputs = p.first_inputs if i == 0 else make_inputs(p.ref_mod, p.device, seed)
        p.first_inputs = None
        inputs, dist, dist_note = _distribution(p, inputs, dist, seed)
        trial = {"trial": i, "seed": seed, "inputs": dist, "weights": weights}
        out, called = _candidate_call(p, room, inputs, facts, i)
        ref_out, ref_in, spent = _reference_call(p, inputs)
        _left_inputs(p, facts, i, ref_in)
        result = _compare(out, ref_out, p)
        if not result["ok"] and (i == 0 or weights == "reinit") and not spent:
            out, result, fell_back = _fall_back(p, room, inputs, facts, (ref_out, ref_in), (out, result), i)
            note = "; ".join(n for n in (note, fell_back) if n)
        if i in facts.unwritten and not result["ok"]:
            result["problems"].append("some elements were never written (they still hold the poison value)")
        trial.update(result)
        if note or dist_note:
            trial["problems"] = [n for n in (note, dist_note) if n] + trial["problems"]
        trial["near_zero"] = near_zero_exploit(out, ref_out, [tol[0] for tol in p.tols] if p.tols else p.atol,
                                               p.ref_model, None if spent else inputs)
        if not trial["ok"] and sum(not t["ok"] for t in res["trials"]) < 2 and not _has_described(out):
            # the first two failed trials (the reasons show two): the inputs they really used and the
            # reference's own rounding noise on them (a float64 run of the reference)
            trial.update(failure_context(p.ref_model, inputs, ref_out, out, p.atol, p.rtol))
        res["trials"].append(trial)
        facts.fingerprints.append([(integ.fingerprint(r), integ.fingerprint(o))
                                   for r, o in zip(integ.flatten(ref_out), integ.flatten(out))])
        del out, ref_out, inputs
    return facts


def _reference_call(p: Prepared, inputs: list[Any]) -> tuple[Any, list[Any], bool]:
    """The reference's outputs on trial i's inputs, what it left in its inputs, and whether it wrote
    to the judge's own (`inputs` then no longer hold the trial's inputs: nothing calls with them
    again). It gets copies where it writes to its inputs; whether it does is known from its first
    call, and checked on every call after (a clamp in place only past the task's range: red team,
    2026-11-27)."""
    marks = None if p.ref_writes_inputs else _marks(inputs)
    with p.torch.no_grad():
        ref_in = integ.clone_inputs(inputs) if p.ref_writes_inputs else inputs
        ref_out = reference_output(p.ref_model, ref_in, clone=False)
    spent = marks is not None and _marks(ref_in) != marks
    p.ref_writes_inputs |= spent
    return ref_out, ref_in, spent


def _marks(values: list[Any]) -> list[Any]:
    return [integ.fingerprint(v) for v in integ.flatten(values)]


def _left_inputs(p: Prepared, facts: TrialFacts, i: int, ref_in: list[Any]) -> None:
    """Where the candidate changed its inputs in trial i's last call, whether it left them as the
    reference leaves its own (`ref_in`, after its call): doing the reference's work in place is a
    warning only, leaving something else there is not (a candidate that filled its input with NaN
    beside a reference adding to it in place: red team, 2026-11-27)."""
    facts.mutated_otherwise = [k for k in facts.mutated_otherwise if k != i]
    if i in facts.mutated:
        left = [(slot[1], r) for slot, r in zip(p.inputs, integ.flatten(ref_in))
                if slot is not None and isinstance(r, p.torch.Tensor)]
        if not all(p.torch.allclose(c, r, p.atol, p.rtol, equal_nan=True) for c, r in left):
            facts.mutated_otherwise.append(i)


def _fall_back(p: Prepared, room: RoomClient, inputs: list[Any], facts: TrialFacts, ref: tuple[Any, list[Any]],
               failed: tuple[Any, dict[str, Any]], i: int) -> tuple[Any, dict[str, Any], str]:
    """A failed first trial, or trial with re-initialised weights, again with each other way of
    sharing the weights (p.weights_untried, prepare._share_weights): the first that passes stands
    for every later trial and for timing, and the trial says so. A ModelNew that builds its layers
    in another order than Model and applies them by name is right with Model's values by name; one
    whose two layers cannot be told apart on the task's weights (a branch gated by a zero) only
    shows which way it takes them here (red team, 2026-11-27). Only a failure that the same call
    repeats, output for output: a room that fails one call and passes the next, or fails it
    otherwise, is not given another way to pass (a second chance hid a wrong call). Where none
    passes, the first trial is tried once more with the values ModelNew built itself
    (p.weights_as_built), to say whether it changes its weights at construction; the verdict
    stands. The outputs, the comparison and a note."""
    out, result = failed
    if not p.weights_untried and (i or p.weights_as_built is None):
        return out, result, ""
    again, again_result = _call_again(p, room, inputs, facts, ref, i)
    if again_result["ok"] or not _compare(again, out, p)["ok"]:
        return out, {**result, "call_dependent": True}, (
            f"the same call on the same inputs and weights {'passed' if again_result['ok'] else 'gave other outputs'} "
            "when made again: its outputs depend on how often it is called")
    first = p.weights
    while p.weights_untried:
        p.weights = p.weights_untried.pop(0)
        share_state(p, room)
        out, result = _call_again(p, room, inputs, facts, ref, i)
        if result["ok"]:
            p.weights_untried = []
            return out, result, _weights_note(first, p.weights)
    if i or p.weights_as_built is None:
        return out, result, ""
    stood, p.weights = p.weights, p.weights_as_built
    share_state(p, room)
    right = _call_again(p, room, inputs, facts, ref, i)[1]["ok"]
    p.weights = stood
    share_state(p, room)
    if not right:
        return out, result, ""
    names = list(p.weights_as_built.as_built)
    return out, {**result, "right_as_built": True}, (
        f"right with the values ModelNew builds for {', '.join(names[:3])}{' ...' if len(names) > 3 else ''} itself, "
        "which differ from Model's; wrong with Model's values by name, as loading Model's weights gives them")


def _call_again(p: Prepared, room: RoomClient, inputs: list[Any], facts: TrialFacts, ref: tuple[Any, list[Any]],
                i: int) -> tuple[Any, dict[str, Any]]:
    """Trial i's call once more (what it shows of the inputs and outputs replacing the last call's);
    `ref`: the reference's outputs and what it left in its inputs."""
    for seen in (facts.mutated, facts.aliased, facts.unwritten):
        seen[:] = [k for k in seen if k != i]
    out, _ = _candidate_call(p, room, inputs, facts, i)
    _left_inputs(p, facts, i, ref[1])
    return out, _compare(out, ref[0], p)


def _weights_note(first: WeightShare, now: WeightShare) -> str:
    """What the weights that passed do that those tried first did not."""
    moved = sorted(k for k, source in first.state_from.items() if k in now.state and now.state_from.get(k, k) != source)
    return (f"weights shared by Model's names: ModelNew's {', '.join(moved[:3])}{' ...' if len(moved) > 3 else ''} "
            "held others of Model's values as built, but it computes as Model with Model's values under their names")


def _reinit(p: Prepared, seed: int) -> tuple[bool, str, list[str]]:
    """Fresh weights in the reference, to be shared with the room (prepare.share_state), and a note.
    Model's parameters that ModelNew holds by name or by value (prepare._match_by_value) get new
    values, those tied to one of equal values get its new values. The others keep the task's values,
    in the reference and in the room, and the note names them: a weight stored transposed, a
    LayerNorm's ones under another name. A parameter is held where any of its names is: a head tied
    to the embedding is the embedding's weight (restoring it by its other name undid the new
    embedding, red team 2026-11-27). Buffers keep their values (perturb_weights). Also the kept
    parameters of varied values (trial_findings warns of them)."""
    own, params = p.ref_model.state_dict(), dict(p.ref_model.named_parameters())
    if not params:
        return False, "weights not re-initialised: the model has no parameters", []
    held = {own[k].data_ptr() for k in p.weights.held() if k in own}
    kept = {k: v.clone() for k, v in own.items() if v.data_ptr() not in held}
    unheld = [k for k, prm in params.items() if prm.data_ptr() not in held]
    if len(unheld) == len(params):
        return False, (f"weights not re-initialised: ModelNew holds none of Model's parameters "
                       f"({', '.join(list(params)[:3])}) by name or by values of their own"), []
    before = {k: value_digest(params[k]) for k in params if k not in unheld}
    perturb_weights(p.ref_model, seed)
    p.perturbed = True
    fresh = p.ref_model.state_dict()
    unheld += [k for k in before if value_digest(params[k]) == before[k]]  # no new values to give (an integer one)
    with p.torch.no_grad():
        for k, stand in p.weights.state_ties.items():
            fresh[k].copy_(fresh[stand])
        for k, v in kept.items():
            fresh[k].copy_(v)
    if not unheld:
        return True, "", []
    values = {k: kept.get(k, params[k]) for k in unheld}
    varied = [k for k, v in values.items() if v.numel() > 1 and not is_constant(v)]
    return True, (f"{', '.join(unheld[:3])}{' ...' if len(unheld) > 3 else ''} kept the task's values: ModelNew "
                  "holds them by no name of Model's, nor by values of their own (one number throughout, "
                  "or laid out anew)"), varied


def _compare(out: Any, ref_out: Any, p: Prepared) -> dict[str, Any]:
    described = [(k, o) for k, o in enumerate(integ.flatten(out)) if isinstance(o, _Described)]
    if not described:
        return compare(out, ref_out, p.atol, p.rtol, p.tols)
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
        marks = None if p.ref_writes_inputs else _marks(alt)
        with p.torch.no_grad():
            alt_ref = reference_output(p.ref_model, alt, clone=p.ref_writes_inputs)
        if marks is not None and _marks(alt) != marks:  # it writes to inputs like these: the candidate gets them afresh
            p.ref_writes_inputs = True
            alt = distribute(inputs, dist, seed, p.device)
        ok = all(bool(p.torch.isfinite(o).all()) for o in integ.flatten(alt_ref)
                 if isinstance(o, p.torch.Tensor) and (o.is_floating_point() or o.is_complex()))
        if ok or not p.warm_finite:
            return alt, dist, ""
        return inputs, "task", f"{dist} inputs make the reference non-finite; used the task's inputs"
    except StageError:
        return inputs, "task", f"the reference rejects {dist} inputs; used the task's inputs"


def _fill_poison(p: Prepared) -> None:
    for slot, t in zip(p.outputs, p.templates):
        if slot is not None:
            slot[1].copy_(integ.poisoned_like(t, p.device))


def _candidate_call(p: Prepared, room: RoomClient, inputs: list[Any], facts: TrialFacts, i: int):
    """One call in the room on a copy of `inputs`; the outputs as the judge's own tensors (cloned
    from the shared buffers; non-tensors from the reply; None where nothing usable came back)."""
    attach(p, room)
    args = put_inputs(p, inputs)
    _fill_poison(p)
    sync(p)
    free_cached(p, 2 * p.out_bytes)  # the room's outputs and as much again for what it makes on the way
    called = room.call(Call(args=args, outputs=[s[0] if s else None for s in p.outputs], poison=True, release=True))
    sync(p)
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


def trial_findings(res: dict[str, Any], p: Prepared, facts: TrialFacts) -> None:
    f = integ.finding
    res["checks_run"] += ["input_mutation", "unwritten_output", "plain_tensor", "output_varies",
                          "tolerance_exploit", "background_processes"]
    # where the reference does the same, the candidate only mirrors it (red team, 2026-11-27: a reference
    # passing its mask through, another adding in place, and the candidates doing as they do, failed)
    mirrored = " (the reference does too: a warning only)"
    if facts.mutated:
        as_reference = not facts.mutated_otherwise
        res["findings"].append(f("input_mutation", f"the candidate modified its inputs in place (trials "
                                                   f"{facts.mutated}); write results to new tensors"
                                 + (mirrored if as_reference else ""),
                                 severity="warning" if as_reference else "error"))
    if facts.aliased:
        res["findings"].append(f("output_aliases_input", "an output shares storage with an input (a view or the "
                                                         "input itself); return a new tensor"
                                 + (mirrored if p.ref_aliases_inputs else ""),
                                 severity="warning" if p.ref_aliases_inputs else "error"))
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
    if facts.weights_unreached:
        res["findings"].append(f(
            "weights_unreached", "ModelNew's state_dict holds none of Model's parameters by name or by the values "
            "they were built with, so the trial with re-initialised weights could not run: weights loaded into it "
            "by Model's names would not reach what it computes (expected where it fuses or lays out every weight "
            "anew; not where it keeps them outside its state_dict)", severity="warning"))
    elif facts.weights_kept:
        kept = facts.weights_kept
        res["findings"].append(f(
            "weights_unreached", f"{', '.join(kept[:3])}{' ...' if len(kept) > 3 else ''} of Model's parameters kept "
            "the task's values in the trial with re-initialised weights: ModelNew holds them by no name of Model's nor "
            "by the values they were built with, so weights loaded into it by Model's names would not reach them "
            "(expected where it lays them out anew: transposed, fused, folded; not where it keeps them outside its "
            "state_dict)", severity="warning"))
    if any(_constant_output([trial[k] for trial in facts.fingerprints if k < len(trial)], p.rtol)
           for k in range(max(map(len, facts.fingerprints), default=0))):
        res["findings"].append(f("constant_output", "the candidate returned the same output for different inputs "
                                                    "while the reference's changed: the output does not depend on "
                                                    "the input"))


def _constant_output(pairs: list[tuple[Any, Any]], rtol: float) -> bool:
    """One output over the trials, (the reference's fingerprint, the candidate's): the reference's
    changed by more than `rtol` of its values and the candidate's did not change. A float32 softmax's
    row sums move in their last bit from one input to the next; a candidate summing in float64 gets
    exactly 1 every time, and was called constant (red team, 2026-11-27)."""
    ref_fps = [r for r, _ in pairs if r is not None]
    cand_fps = [c for _, c in pairs if c is not None]
    if len(cand_fps) < 2 or len(set(cand_fps)) != 1 or len(ref_fps) < 2:
        return False
    first = ref_fps[0]
    return any(fp[0] != first[0] or any(abs(a - b) > rtol * max(abs(a), abs(b))
                                        for a, b in zip((fp[1], *fp[2]), (first[1], *first[2])))
               for fp in ref_fps[1:])

