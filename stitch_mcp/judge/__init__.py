"""The judge: the trusted half of the run stage. It never imports candidate code.

It runs in a worker process of the server's (stitch_mcp.worker, stage "run"); the candidate runs
in a sandboxed room process (stitch_mcp.room) that the judge starts and talks to through one
typed door (stitch_mcp.door) and shared buffers (stitch_mcp.shared_tensors). Read top to bottom:

1. prepare   - take the two rooms (candidate, and the reference's for eager; started ahead of
               need), import the reference, hold the check's share of GPU memory, ask the rooms
               to load, then make the first inputs, build the reference model, warm it up
                                                                                 (judge/prepare.py)
2. load      - the rooms import their programs and build their models; the candidate's room gets
               the reference's weights through shared buffers (the reference's room builds its own
               from the same seed); both make a first call (lazy builds happen here), all before
               the device lease                                                  (judge/prepare.py)
3. trials    - per trial the judge draws inputs from seeds it alone knows, copies them into the
               room's input buffers, asks for one call, clones the output buffers, compares them
               with its own reference run and with its private copy of the inputs (judge/trials.py)
4. findings  - what the trials show: input mutation, unwritten or constant output, non-tensor
               or aliased outputs, background threads and processes seen from outside
                                                                                 (judge/trials.py)
5. timing    - every timed call gets inputs never used before; the judge's own clock brackets
               each call (and its own work between calls) and rejects room times it contradicts;
               some timed outputs are checked; where eager beside the candidate is slower than
               the task's clean time, the reference's room is timed again alone once the
               candidate's room has ended (on a CPU, both rooms are first timed alone in
               turns, to compare like with like), and so are eager's batches where they checked the
               candidate's claim; torch.compile's baseline comes from the task's cache or
               the baseline worker (check.py), else is timed here once the rooms have ended
                                                                                 (judge/timing.py)

This module runs them in that order and holds the device lease around trials and timing. The
result is sent once the timing is done (run_stage's `report`), while the rooms end; the device
lease and the memory share are given back only after they have.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from stitch_mcp.correctness import StageError, free_cuda_cache
from stitch_mcp.judge.prepare import (
    Prepared,
    free_cached,
    load_candidate,
    prepare,
    restore_weights,
    warm_reference,
)
from stitch_mcp.judge.timing import (
    baselines,
    batch_bracket,
    batches_verified,
    check_timed_outputs,
    cpu_batches,
    door_allowance,
    eager_agrees,
    eager_batches_alone,
    judge_times,
    needs_compile_timed,
    needs_cpu_batches,
    physical_floor,
    settle_cpu_clock,
    time_alone,
    time_both_alone,
    time_rooms,
)
from stitch_mcp.judge.trials import run_trials, trial_findings
from stitch_mcp.judge_room import RoomClient, RoomGone, drop_spares


def run_stage(spec: dict[str, Any], report: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The stage's result. `report(result)` where given sends it as soon as it is final: after the
    timing, while the rooms end and before the device lease and the memory share are given back
    (the worker then sends nothing more)."""
    from stitch_mcp.events import stage

    res: dict[str, Any] = {"trials": [], "findings": [], "checks_run": [], "stage_seconds": {}, "notes": []}
    rooms: dict[str, RoomClient] = {}
    with contextlib.ExitStack() as hold:  # the check's share of GPU memory: released after the rooms end
        try:
            stage("import")
            if "ordered_at" in spec:  # the worker's start: a spare's wait for its order, or a new one's imports
                res["stage_seconds"]["judge_start"] = round(time.monotonic() - spec["ordered_at"], 4)
            lap = _lap(res["stage_seconds"])
            ahead = os.environ.get("CUDA_VISIBLE_DEVICES") if spec.get("gpu") and \
                os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" else None  # a spare room's CUDA made there
            rooms["candidate"] = RoomClient.start(spec, spec["candidate_source"], cuda_ahead=ahead)
            if spec.get("timing"):  # the eager baseline runs in a room of the same kind, beside it
                rooms["reference"] = RoomClient.start(spec, spec["reference_source"], model_class="Model",
                                                      cuda_ahead=ahead)
            drop_spares()  # rooms this judge started ahead and does not use (and their CUDA contexts)
            lap("rooms_start")
            p = prepare(spec, res, hold, rooms)
            lap("prepare")
            _extend_deadlines(rooms, sum(res["stage_seconds"].get(k, 0.0) for k in ("compile_ahead", "memory_wait")))
            _judge(spec, res, p, rooms, stage, report)
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
            p = None  # its tensors go with it
            free_cuda_cache()
    return res


def _judge(spec: dict[str, Any], res: dict[str, Any], p: Prepared, rooms: dict[str, RoomClient], stage,
           report: Callable[[dict[str, Any]], None] | None) -> None:
    room = rooms["candidate"]
    lap = _lap(res["stage_seconds"])
    stage("candidate_import")
    reference = rooms.get("reference")  # loading since prepare, beside the candidate's room
    if reference is not None and p.device != "cuda":
        # On a CPU the candidate's room makes its first call only once the reference's has loaded. Two
        # like processes on one core, one beginning its work while the other still loaded, ran 12%
        # apart (up to 23%) for their whole lives, the first slower, in 56 of 62 runs. In checks of a
        # candidate doing eager's own relu, its single calls were 15-19% slower than eager's in one
        # check of ten, 5-8% with this order (their 90th percentile; 2-core host, 2026-11-27).
        reference.loaded()
    first = load_candidate(spec, res, p, room)  # imports, lazy builds, construction, a first call: no lease
    if reference is not None and p.device == "cuda":
        reference.loaded()
    room.answer(first)  # whatever the candidate compiles on first use is done once it answers
    if reference is not None:
        warm_reference(p, reference)
    lap("load")
    with _device_lease(spec, res, stage) as lease:  # the GPU to ourselves: trials and timing
        _extend_deadlines(rooms, lease.waited_s)
        lap("lease_wait")
        stage("correctness")
        facts = run_trials(spec, res, p, room, stage)
        lap("correctness")
        stage("integrity")
        trial_findings(res, p, facts)
        res["findings"] += room.process_findings()
        lap("integrity")
        clean = all(t["ok"] for t in res["trials"]) and not any(f["severity"] == "error" for f in res["findings"])
        closing = None
        if spec.get("timing") and clean:
            closing = _timing(spec, res, p, rooms, stage)
            lap("timing")
        res["findings"] = list({f["code"]: f for f in reversed(res["findings"])}.values())[::-1]
        if closing is not None:
            try:
                if report is not None:  # final: nothing the rooms do from here on is looked at
                    res["room"] = room.describe()
                    res["lease"]["window"] = [lease.acquired_at, time.time()]
                    report(res)
            finally:
                closing.join()  # the device lease and the memory share end only once the rooms have


def _timing(spec: dict[str, Any], res: dict[str, Any], p: Prepared, rooms: dict[str, RoomClient],
            stage) -> threading.Thread | None:
    """Timing (5 above). Returns the thread ending the rooms while it still runs (to be joined);
    None once they have ended (the judge times torch.compile itself only after they have)."""
    stage("timing", what="candidate and eager, interleaved")
    room, reference = rooms["candidate"], rooms["reference"]
    lap = _lap(res["stage_seconds"])  # the parts of timing, for tools/bench_check.py
    restore_weights(p, room)  # the task's weights after a trial re-initialised them: as the reference's room has
    free_cached(p, 4 * p.out_bytes)  # what the trials left cached in the judge: both rooms' outputs need it now
    with _one_core(p, rooms, res) as one_core:
        timed = time_rooms(spec, p, rooms, cpu_clock=one_core and p.device != "cuda")
        lap("timing_interleaved")
        batches = None
        if needs_cpu_batches(timed):
            stage("timing", what="batches of back-to-back calls")
            timed.cpu_batches = cpu_batches(p, rooms, timed)
            lap("timing_batches")
        elif not timed.cpu_clock and door_allowance(timed, p.device) > 0.1 * statistics.median(timed.candidate.room_ms):
            stage("timing", what="batches of back-to-back calls")
            batches = batch_bracket(p, rooms, timed)
            lap("timing_batches")
        alone = both_alone = None
        agrees, verified = eager_agrees(spec, res, timed), batches_verified(timed, batches, p.device)
        if timed.cpu_clock and not agrees:  # eager is timed alone next: on the CPU clock, the two in turns first
            stage("timing", what="the candidate and eager alone, in turns")
            both_alone = time_both_alone(p, rooms, len(timed.candidate.room_ms) // 2, sampled=timed)
            lap("timing_both_alone")
        res["findings"] += room.process_findings()
        if agrees and verified is None:
            closing = _start_closing([room, reference])
        else:
            room.close()  # from here on nothing of the candidate runs
            if verified is not None:
                stage("timing", what="eager's batches alone")
                batches = eager_batches_alone(p, reference, timed, batches, verified)
                lap("timing_eager_batches_alone")
            if not agrees:
                stage("timing", what="eager alone")
                alone = time_alone(p, reference, len(timed.reference.room_ms) // 2, timed.cpu_clock)
                lap("timing_eager_alone")
            closing = _start_closing([reference])
    try:
        judge_times(res, p, timed, batches)
        if one_core and p.device != "cuda":
            res["timing"]["method"] += "; the judge and both rooms on one core (each room held by a cpuset), one thread each"
        stage("timing", what="checking timed outputs")
        check_timed_outputs(res, p, timed)  # on samples the judge holds, while the rooms end
        lap("timing_outputs_checked")
        physical_floor(res, p, timed, spec)
        if needs_compile_timed(spec, res):
            closing.join()  # torch.compile is timed with no room alive
        baselines(spec, res, p, stage, alone, both_alone)
        if timed.cpu_clock:
            settle_cpu_clock(res)
        lap("timing_baselines")
    except BaseException:
        closing.join()
        raise
    return closing if closing.is_alive() else None


def _start_closing(rooms: list[RoomClient]) -> threading.Thread:
    """End rooms in the background: killed together (each one's processes and CUDA context take
    0.1-0.2 s to go on an H100 host), then closed one after the other (a close reaps whatever is
    left of the judge's children but the live rooms, so two at once could reap each other's
    helpers). Join it."""
    for room in rooms:
        room.kill()
    thread = threading.Thread(target=lambda: [r.close() for r in rooms])
    thread.start()
    return thread


@contextlib.contextmanager
def _one_core(p: Prepared, rooms: dict[str, RoomClient], res: dict[str, Any]):
    """The judge and both rooms share one CPU core while they are timed (they take turns, never run
    at once). On a GPU a call's host work (launches, the door) then runs equally fast in either room:
    on an H100 host two rooms' host work differed by up to 35% for a whole check, from the cores they
    had. On a CPU, only where each room is held by its slot's cpuset (stitch_mcp.cpusets: a room
    could otherwise spread its threads over every core, eager keeping one), with one thread in the
    judge as in the rooms; a note says where the rooms could not be pinned."""
    cpu = p.device != "cuda"
    if not hasattr(os, "sched_setaffinity") or (cpu and not all(room.held for room in rooms.values())):
        yield False
        return
    import psutil

    from stitch_mcp.timing import pinned

    core = {psutil.Process().cpu_num()}
    with pinned(core, one_thread=cpu):
        held = all(room.pin(core) for room in rooms.values())
        if not held:
            res["notes"].append("timing: the rooms could not be pinned to the judge's CPU core on this host")
        yield held


def _extend_deadlines(rooms: dict[str, RoomClient], waited_s: float) -> None:
    """A room's time limit does not run while the judge waits for others' checks (GPU memory, the
    device): a lazy build that started before the wait still has its whole limit."""
    for room in rooms.values():
        room.deadline += waited_s


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


