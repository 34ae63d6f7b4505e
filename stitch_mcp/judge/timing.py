"""Timing (5): the candidate's room and the reference's room, judged on the judge's own clock.

Unlike stitch_mcp.timing (in-process timing of the torch.compile baseline), nothing here takes a
room's word: every timed call gets inputs never used before, the judge's clock brackets each call
and its own work between calls, calls too short for that are also timed in batches, and some
timed outputs are checked. Then the eager and torch.compile baselines, and the physical floor.
On a CPU whose rooms are held to one core (stitch_mcp.cpusets), the clock is the CPU each room's
processes used, read from their cgroup by the judge (judge_cpu_clock), with batches on that clock
where the door costs much beside a call (cpu_batches), and no gain credited within what the
harness costs a call, which a room can skip (skippable_harness_ms).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import secrets
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from stitch_mcp import integrity as integ
from stitch_mcp.compare import compare
from stitch_mcp.correctness import TimingInputs, bench_options, compile_baseline_known, measure_baselines
from stitch_mcp.cpusets import queued_ms
from stitch_mcp.door import Arg, Batch, Call, Run
from stitch_mcp.gpu_memory import BATCH_BYTES  # inputs and outputs of one batch's calls, in shared buffers
from stitch_mcp.judge.prepare import Prepared, attach, put_inputs, reference_output, sync
from stitch_mcp.judge_room import RoomClient, RoomGone
from stitch_mcp.timing import L2_FLUSH_BYTES


@dataclass
class Lane:
    """One room's timed calls: its own times (untrusted for the candidate), the judge's wall time
    of each call, and the judge's own work after each call (fresh inputs, L2 flush, sync)."""

    room_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    after_ms: list[float] = field(default_factory=list)
    block_medians: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # on the CPU clock (Timed.cpu_clock): its processes' CPU per call
    own_cpu_ms: list[float] = field(default_factory=list)  # the room's own account: its forward's thread CPU,
    copy_cpu_ms: list[float] = field(default_factory=list)  # and copying its outputs'
    judge_queued_ms: list[float] = field(default_factory=list)  # on the CPU clock: the judge's wait for its core
    idle_cpu_ms: float = 0.0  # on the CPU clock, its processes' CPU between its calls
    irq_windows: list[tuple[int, float]] = field(default_factory=list)  # on the CPU clock: interrupt_storm


@dataclass
class Timed:
    reference: Lane
    candidate: Lane
    checked: dict[int, Any] = field(default_factory=dict)  # seed -> [(places, values)] kept of each output
    must_check: list[int] = field(default_factory=list)  # seeds whose samples are always compared
    out_bytes: int = 0
    in_bytes: int = 0
    cpu_clock: bool = False  # on a CPU with both rooms held to one core: see judge_cpu_clock
    idle_wall_ms: float = 0.0  # on the CPU clock, how long the candidate was not asked anything
    cpu_batches: Batches | None = None  # on the CPU clock, calls whose door costs much beside them: cpu_batches


BLOCK = 5  # calls per room before switching: A/B/A/B in blocks


def time_rooms(spec: dict[str, Any], p: Prepared, rooms: dict[str, RoomClient], cpu_clock: bool = False) -> Timed:
    """The candidate's room (B) and the reference's room (A), timed in alternating blocks on the
    same fresh inputs (a seed drawn now for each call, never seen before by either room). The
    judge's clock brackets every call; some candidate outputs are cloned for checking, chosen
    after the call. Ends when both spreads are small, after `timing_iters` calls, or after 2 s.
    `cpu_clock`: both rooms are held to the judge's core by their cpusets (judge._one_core)."""
    n_max = int(spec.get("timing_iters") or 100)
    flush = _l2_flush(p)
    t = Timed(Lane(), Lane(), cpu_clock=cpu_clock)
    for room in rooms.values():
        attach(p, room)
    started = time.monotonic()
    for which in ("reference", "candidate"):  # warm-up, untimed (each room made a first call before the lease)
        buffers = p.of(rooms[which])
        args, _ = _gap(p, flush, secrets.randbelow(2 ** 31 - 1), buffers.inputs)
        rooms[which].call(Call(args=args, outputs=_specs(buffers.outputs), timed=True))
    cpu_from = {which: room.cpu_ms() for which, room in rooms.items()} if t.cpu_clock else {}
    irq = _interrupt_window() if t.cpu_clock else None
    wall_from = time.perf_counter()
    while len(t.candidate.room_ms) < n_max:
        for which in ("reference", "candidate"):  # inputs of their own: nothing one room sees helps the other
            lane = getattr(t, which)
            for _ in range(BLOCK):
                seed = secrets.randbelow(2 ** 31 - 1)
                _timed_call(p, rooms[which], lane, seed, flush, t.cpu_clock, irq)
                _after_call(p, t, rooms[which], seed)
            lane.block_medians.append(statistics.median(lane.room_ms[-BLOCK:]))
        n = len(t.candidate.room_ms)
        if n >= 10 and (max(_spread(_clock(t.candidate, t.reference)), _spread(_clock(t.reference, t.reference))) < 0.02
                        or time.monotonic() - started > 2.0):
            break
    for which, used in cpu_from.items():
        lane = getattr(t, which)
        lane.idle_cpu_ms = rooms[which].cpu_ms() - used - sum(lane.cpu_ms)
    t.idle_wall_ms = (time.perf_counter() - wall_from) * 1e3 - sum(t.candidate.wall_ms)
    t.in_bytes = integ.tensor_bytes([s[1] for s in p.inputs if s is not None])
    return t


def _timed_call(p: Prepared, room: RoomClient, lane: Lane, seed: int, flush, on_cpu_clock: bool = False,
                irq=None) -> None:
    """One timed call; `irq` (_interrupt_window): the interrupts on the judge's core while it ran."""
    buffers = p.of(room)
    args, gap_ms = _gap(p, flush, seed, buffers.inputs)
    if lane.wall_ms:
        lane.after_ms.append(gap_ms)
    window = irq and irq()
    c0, q0 = (room.cpu_ms(), queued_ms()) if on_cpu_clock else (0.0, 0.0)
    h0 = time.perf_counter()
    called = room.call(Call(args=args, outputs=_specs(buffers.outputs), timed=True))
    lane.wall_ms.append((time.perf_counter() - h0) * 1e3)
    if on_cpu_clock:
        lane.judge_queued_ms.append(queued_ms() - q0)
        lane.cpu_ms.append(room.cpu_ms() - c0)
        lane.own_cpu_ms.append(float(called.room_cpu_ms or 0.0))
        lane.copy_cpu_ms.append(float(called.copy_cpu_ms or 0.0))
    if window:
        _count_window(lane, window(), lane.cpu_ms[-1] if on_cpu_clock else 0.0, room.role == "candidate")
    if called.room_ms is None or not called.room_ms >= 0:
        raise RoomGone("timing_forgery", "the room reported no time for a timed call")
    lane.room_ms.append(float(called.room_ms))


# On the CPU clock, a room timed alone first makes up to this many untimed calls, for up to this
# long: after the other room's calls (or the batches) a room's calls ran up to 3-5x slower for their
# first 5-15 calls (relu over 64K floats, 2-core host, 2026-11-27), the candidate's longer than eager's.
ALONE_WARMUP_CALLS = 10
ALONE_WARMUP_S = 0.25
ALONE_CHECKED = 4  # of the candidate's calls timed alone, these are checked whatever else is drawn
# On the CPU clock the two rooms are timed alone in turns (time_both_alone), this many rounds of at
# least ALONE_BLOCK calls each, so that the host's slow stretches fall on both. Timed one phase after
# the other (the candidate's, then eager's once the candidate's room was closed), whole phases
# differed by up to 1.6x at their 10% quantiles, and honest candidates running eager's own relu came
# out below 0.9x in 5 of 45 checks beside two busy loops, against 6 of 156 in turns (2-core host,
# 2026-11-28). The room going first alternates from round to round.
ALONE_ROUNDS = 10
ALONE_BLOCK = 5
# In turns, the candidate's room is alive while eager's calls are timed, and its timers can bill
# interrupt work to them on the shared core (atk_irq_volley: eager 1.35-1.5x slower, its interrupt
# count under STORM_MARGIN). Eager timed once the room was closed bounds that: the candidate's
# speedup alone is taken over eager in turns, but no higher than over eager after the close times
# this (drift between the two: eager in turns came out at 0.76-2.24x eager after, most within 1.25x),
# nor above 1.0 unless over eager after says so too (_alone_speedup). A room slowing eager gains
# nothing over timing one phase after the other at or above parity, and at most this much below it.
ALONE_DRIFT = 0.3
# On the CPU clock a candidate gets no speedup beyond this over its speedup alone against its better
# time (_both_alone): a candidate running eager's own relu came out at 0.89-0.93 of eager alone, beside
# it at 0.97-1.0; a millisecond of matmul and tanh at 0.81 once (2-core host beside two busy loops,
# 2026-11-27, the two alone phases then one after the other).
CPU_ALONE_SLACK = 0.15
# The alone lanes are compared at this quantile of their calls, the candidate's expressed in eager
# alone's median (_both_alone). A slow stretch of the host (calls 1.5-3x slower for 20-40 calls, then
# back) put an honest candidate doing eager's own relu at 1.3-2.1x eager alone by their medians when
# the phases ran one after the other, 0.41-0.82x in 7 of 26 checks on an idle 2-core host
# (2026-11-27). Their lowest calls are where neither was disturbed. The candidate's calls at or below
# it are all checked (_fastest_calls): a few that skipped work would set it otherwise.
ALONE_QUANTILE = 0.1


def time_alone(p: Prepared, room: RoomClient, calls: int, on_cpu_clock: bool = False) -> Lane:
    """A room timed on its own, nothing of the other room between its calls: the reference's once
    the candidate's room is gone (the clean eager time)."""
    flush = _l2_flush(p)
    if on_cpu_clock:
        _warm_up(p, room, flush, ALONE_WARMUP_S)
    lane = Lane()
    used = room.cpu_ms() if on_cpu_clock else 0.0
    for _ in range(max(calls, 10)):
        seed = secrets.randbelow(2 ** 31 - 1)
        _timed_call(p, room, lane, seed, flush, on_cpu_clock)
        _after_call(p, Timed(Lane(), Lane()), room, seed)
    if on_cpu_clock:
        lane.idle_cpu_ms = room.cpu_ms() - used - sum(lane.cpu_ms)
    return lane


def time_both_alone(p: Prepared, rooms: dict[str, RoomClient], calls: int, sampled: Timed) -> Timed:
    """On the CPU clock, before the candidate's room is closed: each room timed on its own (nothing of
    the other's between its calls), the two taking turns in ALONE_ROUNDS rounds of a warm-up and a
    block of calls each, the first room alternating, so that a slow stretch of the host falls on
    both (like with like, for _both_alone). The idle room's CPU meanwhile is its idle_cpu_ms, charged
    as beside (_charged_clock), and the interrupts on the core are counted per call
    (interrupt_rates). The candidate's outputs are sampled into `sampled`; some of its calls are
    always checked: a room can tell them from its interleaved ones. Returns the lanes as
    Timed(eager's, the candidate's)."""
    flush, irq = _l2_flush(p), _interrupt_window()
    t = Timed(Lane(), Lane(), cpu_clock=True)
    rounds = max(1, min(ALONE_ROUNDS, calls // ALONE_BLOCK))
    per_round, seeds = -(-max(calls, 10) // rounds), []
    used, wall_from = {which: room.cpu_ms() for which, room in rooms.items()}, time.perf_counter()
    warm_ms = dict.fromkeys(rooms, 0.0)
    for r in range(rounds):
        for which in ("candidate", "reference")[::1 if r % 2 == 0 else -1]:
            lane = getattr(t, which)
            warm_ms[which] += _warm_up(p, rooms[which], flush, ALONE_WARMUP_S / rounds)
            for _ in range(per_round):
                seed = secrets.randbelow(2 ** 31 - 1)
                _timed_call(p, rooms[which], lane, seed, flush, True, irq)
                _after_call(p, sampled, rooms[which], seed)
                if which == "candidate":
                    seeds.append(seed)
    for which, room in rooms.items():
        lane = getattr(t, which)
        lane.idle_cpu_ms = room.cpu_ms() - used[which] - sum(lane.cpu_ms) - warm_ms[which]
    t.idle_wall_ms = (time.perf_counter() - wall_from) * 1e3 - sum(t.candidate.wall_ms)
    fastest = _fastest_calls(t.candidate, seeds)
    rest = [seed for seed in seeds if seed not in fastest]
    sampled.must_check += fastest + [rest.pop(secrets.randbelow(len(rest))) for _ in range(min(ALONE_CHECKED, len(rest)))]
    return t


def _warm_up(p: Prepared, room: RoomClient, flush, budget_s: float) -> float:
    """Up to ALONE_WARMUP_CALLS untimed calls, for up to `budget_s`; the CPU they took (on the CPU clock)."""
    warm, started = Lane(), time.monotonic()
    while len(warm.wall_ms) < ALONE_WARMUP_CALLS and time.monotonic() - started < budget_s:
        _timed_call(p, room, warm, secrets.randbelow(2 ** 31 - 1), flush, True)
    return sum(warm.cpu_ms)


def _fastest_calls(lane: Lane, seeds: list[int]) -> list[int]:
    """The seeds of a lane's calls at or below its ALONE_QUANTILE on the CPU clock, which set the
    candidate's time alone (_both_alone): all of them are checked, so that calls that skipped work
    cannot lower it."""
    order = sorted(range(len(seeds)), key=lambda i: lane.cpu_ms[i])
    return [seeds[i] for i in order[:int(ALONE_QUANTILE * len(seeds)) + 1]]


def _specs(slots: list[Any]) -> list[Any]:
    """The door's names for a room's shared slots."""
    return [s[0] if s else None for s in slots]


# Eager beside the candidate within this much of the task's clean eager (its room timed alone, in an
# earlier check on this device) is taken as it is; slower, the reference's room is timed alone again.
# A candidate that slows the reference's room down (its own work beside it) gains at most this much.
EAGER_AGREES = 0.02
# A clean time older than this is measured again whatever the time beside the candidate: one taken
# on a busy host would otherwise stand for good (only a time alone can lower it).
EAGER_ROOM_TTL_S = 600.0


def eager_agrees(spec: dict[str, Any], res: dict[str, Any], t: Timed) -> bool:
    """Whether the eager time beside the candidate agrees with the task's recent clean one (see
    EAGER_AGREES, EAGER_ROOM_TTL_S)."""
    record = (spec.get("baselines_by_device") or {}).get(res.get("device", "")) or {}
    cached, at = record.get("eager_room"), record.get("eager_room_at") or 0.0
    beside = statistics.median(_clock(t.reference, t.reference))
    return bool(cached) and time.time() - at < EAGER_ROOM_TTL_S and beside <= (1 + EAGER_AGREES) * cached["median_ms"]


def _gap(p: Prepared, flush, seed: int, slots: list[Any]) -> tuple[list[Arg], float]:
    """The judge's own work between timed calls: fresh inputs into a room's shared `slots`, the L2
    cache flushed, the device synchronised. Returns the call's arguments and how long it took."""
    from stitch_mcp.loader import make_inputs

    h0 = time.perf_counter()
    fresh = make_inputs(p.ref_mod, p.device, seed)
    args = put_inputs(p, fresh, slots)
    del fresh
    if flush is not None:
        flush.zero_()
    sync(p)
    return args, (time.perf_counter() - h0) * 1e3


# The door's round trip is not the same for every room: on an H100 host (2026-11-24) it was
# 0.36-0.87 ms, and one room's differed from the other's by up to 30% for a whole check (which
# cores the two processes landed on). The per-call bracket allows for half of it. On a 2-core host
# with both cores busy (2026-11-25) one room's round trip was 50% longer than the other's (0.15 ms
# against 0.10 ms): there the bracket allows for all of it.
DOOR_SPREAD = 0.5
CPU_DOOR_SPREAD = 1.0

# Calls shorter than that allowance are also timed in batches of back-to-back calls, each on
# inputs of its own and into output buffers of its own. A batch's time on the judge's clock, W(n),
# is one round trip plus n calls; the difference of two batch sizes cancels the round trip (the
# lowest W of several rounds for each size: interruptions only ever add). A batch of copies alone,
# in the reference's room, measures what the room adds around forward. A room cannot do a batch's
# calls faster than their real work (their outputs are sampled and checked), so the speedup over
# the reference in batches is one the judge has measured itself. Back-to-back calls do not hide
# the host work a call does after its last launch as single calls do, so on a GPU the two speedups
# differ honestly; by more than BATCH_SLACK, the room's times are not believed. On a CPU both clocks
# measure the same work, and the batches are the steadier: single calls of a few microseconds, the
# same code in both rooms, gave speedups of 0.7x to 2.1x where the batches gave 0.86x to 0.98x,
# and with both cores busy an honest clamp's single calls claimed 4.4x its batches' speedup
# (2-core host, 2026-11-25). There, where one call's bracket agrees with the room, the batches
# cap its speedup quietly (a forger gains nothing), and call its times false only beyond
# CPU_BATCH_SLACK (see judge_times).
BATCH_MS = 2.0  # the work of one batch: long beside the door's jitter
# On the CPU clock, longer: what a batch costs besides its calls (0.2-0.5 ms on a 2-core host) is
# withheld over its calls (skippable_harness_ms), from honest candidates too.
CPU_BATCH_MS = 8.0
BATCH_CALLS = (16, 256)
BATCH_ROUNDS = 5
BATCH_SLACK = 1.5
CPU_BATCH_SLACK = 10.0
CPU_BATCH_AGREES = 0.1  # the room's time stands within this much of the batches' (a forger gains at most that)
# On the CPU clock the batches' speedup is carried over both ways (_cpu_batch_bound), up to this much
# above the speedup of the single calls (no gain credited there within a room's door and harness).
# Single calls pay cold caches that back-to-back calls do not, each room its own: the first call after
# the other room's ran 3-4x slower than the rest on 64K floats, the candidate's room warming up for
# longer (2-core host, 2026-11-27); an honest candidate doing eager's own 1 ms of work came out at
# 0.85-1.0x in single calls and 0.99-1.0x in batches. A room sees all of a batch's inputs before it
# runs them, and can fuse calls across it: it gains no more than this.
CPU_BATCH_LOWERS = 0.1
CPU_BATCH_CUT = 1.5  # the reference's forward in batches beyond this times its single call: the batches were cut
# While the judge writes a batch's inputs and times the reference's batches, the candidate's room
# has not been asked anything: an honest one waits on its door (its OpenMP threads passive). One
# that works then, on inputs it can already see or beside the reference, is measured from outside
# (the kernel's CPU accounting of its processes); beyond this share of that time, and IDLE_CPU_MS
# (the accounting's ticks), its times earn no speedup (_worked_idle).
IDLE_CPU_SHARE = 0.1
IDLE_CPU_MS = 20.0


@dataclass
class Batches:
    """Per-call times on the judge's clock from batches of back-to-back calls."""

    calls: int
    candidate_ms: float
    reference_ms: float
    copy_ms: float
    reference_calls: int | None = None  # on the CPU clock, the reference's larger batch, sized on its own calls
    copy_spread_ms: float = 0.0  # per call, the copies' second-lowest rounds above their lowest: the batches' grain
    fixed_ms: float = 0.0  # on the CPU clock (cpu_batches), what the reference's batch costs besides its calls
    busy_host: bool = False  # more runnable work than cores as they ran (_host_busy)
    idle_cpu_ms: float = 0.0  # CPU the candidate's room used while not asked anything (IDLE_CPU_SHARE)
    idle_wall_ms: float = 0.0
    # on the judge's clock, each room's larger batch over its calls, round trip and all (_gpu_batch_bound)
    candidate_whole_ms: float = 0.0
    reference_whole_ms: float = 0.0
    # eager's lanes timed again once the candidate's room was gone (eager_batches_alone), and the
    # speedup the batches showed with eager's lanes beside that room only
    alone: EagerLanes | None = None
    speedup_beside: float | None = None
    # each room's batch slots ({room: (inputs, outputs)}), for eager_batches_alone
    slots: dict[str, tuple[list, list]] = field(default_factory=dict, repr=False, compare=False)
    rounds: int = BATCH_ROUNDS  # rounds of batches run (cpu_batches: CPU_BATCH_SPAN_S)

    @property
    def beside(self) -> EagerLanes:
        """Eager's lanes as timed beside the candidate's room."""
        return EagerLanes(self.reference_ms, self.copy_ms, self.reference_whole_ms)


@dataclass
class EagerLanes:
    """Eager's side of the batches in one phase, per call: its calls, its copies alone (everything
    but forward), and its larger batch whole (round trip and all)."""

    call_ms: float
    copy_ms: float
    whole_ms: float

    @property
    def forward_ms(self) -> float:
        return self.call_ms - self.copy_ms

    @property
    def round_trip_ms(self) -> float:
        return self.whole_ms - self.call_ms


def _eager_phases(bb: Batches) -> list[EagerLanes]:
    """Eager's lanes beside the candidate's room, and alone where they were timed again."""
    return [bb.beside] + ([bb.alone] if bb.alone else [])


def _door_ms(t: Timed) -> float:
    """The door's honest overhead per call: the reference room's wall time less its own time."""
    return statistics.median([w - r for w, r in zip(t.reference.wall_ms, t.reference.room_ms)])


def door_allowance(t: Timed, device: str) -> float:
    """How far the per-call bracket may honestly be off: twice the spread of the door's overhead
    over sqrt(calls) (chance), or DOOR_SPREAD of the overhead itself (one room against another)."""
    overs = [w - r for w, r in zip(t.reference.wall_ms, t.reference.room_ms)]
    chance = 2 * _iqr(overs) / math.sqrt(min(len(overs), len(t.candidate.wall_ms)))
    return max(0.005, chance, (DOOR_SPREAD if device == "cuda" else CPU_DOOR_SPREAD) * statistics.median(overs))


def batch_bracket(p: Prepared, rooms: dict[str, RoomClient], t: Timed) -> Batches | None:
    """Both rooms timed in batches of k and k/4 calls, interleaved, on fresh inputs; two calls of
    each candidate batch, drawn after it, are always checked. None when a batch would not fit."""
    b_room = statistics.median(t.candidate.room_ms)
    k = _batch_size(t, _batch_call_ms(t, p.device), BATCH_MS)
    slots = _batch_buffers(p, rooms, t, k)
    if slots is None:
        return None
    buffers = (slots, k)
    flush = _l2_flush(p)
    walls: dict[tuple[str, int], list[float]] = {}
    idle = [0.0, 0.0]  # the candidate's room not asked anything: its CPU ms, and how many ms that was
    door = None if p.device == "cuda" else door_allowance(t, p.device)
    _batch_rounds(p, rooms, t, buffers, flush, walls, idle)
    batches = _per_call(walls, k, idle, door)
    implied, contradicted, info = batch_bound(t, batches, p.device)
    if contradicted or _batches_raise(implied, b_room, p.device) or (_unverified(info) and not info.get("host_bound")):
        # Before calling a room's times false (or, on a CPU, raising them or taking them for noise), as
        # many rounds again: other work on the host only ever adds to a batch, so the lowest of all
        # rounds stands. On a 2-core host running a test suite beside it, an honest OpenMP candidate's
        # batches were once 2x slower than its calls. Not where eager's dispatch outweighs its kernel
        # (host_bound, on a GPU): that holds however often they run.
        _batch_rounds(p, rooms, t, buffers, flush, walls, idle)
        batches = _per_call(walls, k, idle, door)
    batches.busy_host = _host_busy()
    batches.slots = buffers[0]
    return batches


def batches_verified(t: Timed, bb: Batches | None, device: str) -> float | None:
    """The speedup over eager (or slowdown) the batches verified, which checks the room's claim;
    None where they said nothing. Where they did, eager_batches_alone once the candidate's room is
    gone."""
    return batch_bound(t, bb, device)[2].get("speedup")


def eager_batches_alone(p: Prepared, reference: RoomClient, t: Timed, bb: Batches, speedup_beside: float) -> Batches:
    """Eager's lanes of the batches (its calls, its copies) timed again for BATCH_ROUNDS rounds once
    the candidate's room is gone, as eager's single calls are (time_alone); batch_bound then reads
    the batches with eager's lanes of either phase (_eager_phases). A room that keeps the GPU busy
    while eager's batches run (contexts take turns on it; kernels queued from a thread that sleeps
    cost it little CPU) slowed them, and with them the speedup its claim is checked against: forged
    claims of 1.67x and 2x stood where the room ran eager's own matmul (H100, 2026-11-27). Its own
    lanes are not timed again. As many rounds again where eager's forward alone came out under half
    its forward beside the room: one H100 host's alone phase put it below zero (its copies' lowest
    rounds apart), which a room slowing eager beside it can also cause."""
    walls: dict[tuple[str, int], list[float]] = {}
    k, flush = bb.calls, _l2_flush(p)
    for _ in range(2):
        _batch_rounds(p, {"reference": reference}, t, (bb.slots, k), flush, walls, [0.0, 0.0])
        lowest = {key: min(times) for key, times in walls.items()}
        alone = EagerLanes(_lane_per_call(lowest, "reference", k), _lane_per_call(lowest, "copy", k),
                           lowest[("reference", k)] / k)
        if alone.forward_ms >= 0.5 * bb.beside.forward_ms:
            break
    return dataclasses.replace(bb, alone=alone, speedup_beside=speedup_beside)


def _lane_per_call(lowest: dict[tuple[str, int], float], lane: str, k: int) -> float:
    """A lane's time per call: its lowest batch of k calls (on the CPU clock, CPU_BATCH_QUANTILE's)
    less its lowest of k/4, over the difference (what a batch costs besides its calls cancels)."""
    return (lowest[(lane, k)] - lowest[(lane, k // 4)]) / (k - k // 4)


def _l2_flush(p: Prepared) -> Any:
    """On a GPU, the buffer zeroed before every timed call or batch (L2_FLUSH_BYTES); None on a CPU."""
    return p.torch.empty(L2_FLUSH_BYTES // 4, dtype=p.torch.int32, device=p.device) if p.device == "cuda" else None


# On the CPU clock, a candidate's door (being told a call, answering it) runs in its own process,
# which can answer it more cheaply than the reference's room: a room that replaced its door loop got
# 1.7-2.6x with the reference's own work (2-core host, 2026-11-26). Where the door costs more than
# this share of a call, both rooms are also timed in batches, whose difference cancels the door.
CPU_DOOR_SHARE = 0.05
# On the CPU clock, the batches' rounds go on for this long (at least BATCH_ROUNDS, at most
# CPU_BATCH_MAX_ROUNDS). Beside two busy loops on a 2-vCPU guest, the core slowed down in stretches
# of a second to over ten (what ran on the other vCPU, which the host pairs on one physical core at
# times): memory-bound work (eager's relu, the copies into the judge's buffers) 1.2-1.5x, compute-bound
# work 1.15-1.2x (tools/host_noise.py, 2026-11-27). Five rounds back to back (0.15 s) often fell in
# one such stretch, so that eager's relu against a C++ loop moved 1.24-1.27x over five checks; a check
# inside a long stretch measures that stretch's speedup whatever the span.
# With each room's batches sized on its own calls, that pair's rounds came to 11-23 in this span (the
# 10th percentile their second or third lowest); over 3 s, 28-51 rounds moved it 1.13x over ten
# checks against 1.11-1.26x at 1.5 s, for 2-3 s more a check: not taken (2026-11-27).
CPU_BATCH_SPAN_S = 1.5
CPU_BATCH_MAX_ROUNDS = 40
# Of those rounds, each lane's at this quantile counts (its lowest below ten rounds): the difference
# of two lanes' lowest rounds carried the luck of each, the relu pair's speedups moving 1.11x over ten
# checks where their 10th percentiles moved 1.055x (the same rounds, 2-core host, 2026-11-27).
CPU_BATCH_QUANTILE = 0.1


def needs_cpu_batches(t: Timed) -> bool:
    """Whether, on the CPU clock, the door costs enough beside the candidate's calls (CPU_DOOR_SHARE)
    for a cheaper one to matter: then cpu_batches."""
    return t.cpu_clock and _door_cpu(t.reference) > CPU_DOOR_SHARE * statistics.median(_clock(t.candidate, t.reference))


def cpu_batches(p: Prepared, rooms: dict[str, RoomClient], t: Timed) -> Batches | None:
    """On the CPU clock, each room's CPU per call from batches of k and k/4 back-to-back calls (one
    message each, so what its door costs cancels out of their difference; two calls of each of the
    candidate's batches are always checked), each lane's rounds taken at CPU_BATCH_QUANTILE, over
    CPU_BATCH_SPAN_S. Each room's k is sized on its own calls (_cpu_batch_layout). Its smaller batches
    cannot be padded: the candidate's per call is at least its larger batch less the reference's
    door, over k. CPU its processes use between its batches beyond the reference's is charged to
    them. The reference's room also runs them without forward (CPU_LANES): what its harness costs
    per call (skippable_harness_ms). None where a batch would not fit."""
    layout = _cpu_batch_layout(p, rooms, t)
    if layout is None:
        return None
    sizes, slots = layout
    laid = max(sizes.values())
    used = {which: [0.0, room.cpu_ms()] for which, room in rooms.items()}  # in batches, and from the start
    rounds_ms: dict[tuple[str, int], list[float]] = {}
    irq, rounds, started = _interrupt_window(), 0, time.monotonic()
    candidates_s = 0.0  # the candidate's batches do not count towards the span: sleeping in them would end it
    # the harness lane's calls: the reference's slots, their inputs never read
    harness = {n: _batch_calls(p, *slots["reference"], n)[0] for n in (sizes["reference"] // 4, sizes["reference"])}
    while rounds < BATCH_ROUNDS or (rounds < CPU_BATCH_MAX_ROUNDS
                                    and time.monotonic() - started - candidates_s < CPU_BATCH_SPAN_S):
        rounds += 1
        for larger, (lane, which, forward) in _cpu_round_order():
            n = sizes[which] if larger else sizes[which] // 4
            calls, seeds = _batch_calls(p, *slots[which], n) if forward else (harness[n], [])
            window, h0 = irq and irq(), time.monotonic()
            c0 = rooms[which].cpu_ms()
            rooms[which].ask(Batch(calls=calls, forward=forward, passes=not forward))
            rooms[which].ask(Run())
            spent = rooms[which].cpu_ms() - c0
            candidates_s += (time.monotonic() - h0) if which == "candidate" else 0.0
            if window:
                _count_window(getattr(t, which), window(), spent, which == "candidate")
            used[which][0] += spent
            rounds_ms.setdefault((lane, n), []).append(spent)
            if which == "candidate":
                _check_two(p, t, seeds, slots[which][1], laid)
    lowest = {key: _quantile(spent, CPU_BATCH_QUANTILE) for key, spent in rounds_ms.items()}
    idle = {which: rooms[which].cpu_ms() - start - spent for which, (spent, start) in used.items()}
    per = {lane: _lane_per_call(lowest, lane, sizes[which]) for lane, which, _ in CPU_LANES}
    k, k_ref = sizes["candidate"], sizes["reference"]
    door = lowest[("reference", k_ref // 4)] - k_ref // 4 * per["reference"]
    candidate = max(per["candidate"], (lowest[("candidate", k)] - door) / k) + \
        max(0.0, idle["candidate"] - idle["reference"]) / (rounds * (k + k // 4))
    return Batches(calls=k, reference_calls=k_ref, candidate_ms=candidate, reference_ms=per["reference"],
                   copy_ms=max(0.0, per["harness"]), fixed_ms=max(0.0, door), idle_cpu_ms=idle["candidate"],
                   idle_wall_ms=0.0, rounds=rounds)


def _cpu_batch_layout(p: Prepared, rooms: dict[str, RoomClient],
                      t: Timed) -> tuple[dict[str, int], dict[str, tuple[list, list]]] | None:
    """cpu_batches' sizes, each room's k ({room: k}: CPU_BATCH_MS of its own calls on the CPU clock,
    which a room cannot forge), and its batch slots ({room: (inputs, outputs)}, laid out for the
    larger k). Both rooms' batches sized on the slower room's calls, the reference's batches of
    eager's 60 us relu were 16 calls beside a C++ loop's 0.55 ms: a quarter of them sat beside its
    door's 0.5 ms, and the difference of the two sizes moved eager's time per call 1.29x over ten
    checks beside two busy loops (2-core host, 2026-11-27). Session 18 took per-room sizes back as
    lanes of different sizes did not compare (0.09 ms a call in 151-call batches against 0.02 ms in
    28-call ones), but those sizes came from a room's own claimed clock; on the CPU clock the same
    relu and copy on fresh slots read 42-47 us a call in batches of 16 to 256 calls (2026-11-27).
    None where a batch would not fit."""
    sizes = {which: _batch_size(t, statistics.median(_clock(getattr(t, which), t.reference)), CPU_BATCH_MS)
             for which in ("reference", "candidate")}
    slots = _batch_buffers(p, rooms, t, max(sizes.values()))
    return None if slots is None else (sizes, slots)


def _cpu_round_order() -> list[tuple[bool, tuple[str, str, bool]]]:
    """One round of cpu_batches: each lane's smaller and larger batch ((larger, lane)), in an order
    drawn afresh. A batch inherits from the one before it (what that left in the caches, the judge's
    work after it), and in a fixed order each lane's two sizes followed batches of sizes of their
    own, which the difference of the sizes does not cancel: eager's own relu as the candidate came
    out at 0.84-0.93x in eight loaded checks with the candidate's lane last, 0.95-1.0x with it first
    (2-vCPU Xeon guest, 2026-11-28). Drawn afresh, every lane follows every other alike."""
    order = [(larger, lane) for larger in (False, True) for lane in CPU_LANES]
    secrets.SystemRandom().shuffle(order)
    return order


# cpu_batches' lanes: (lane, room, forward). The reference's batches also run without forward: the
# harness alone (a module call, what wraps forward, the loop, the copies into the judge's buffers),
# which a candidate's room can skip (skippable_harness_ms).
CPU_LANES = (("reference", "reference", True), ("harness", "reference", False), ("candidate", "candidate", True))


def skippable_harness_ms(harness_ms: float, fixed_ms: float = 0.0, calls: int = 1) -> float:
    """On the CPU clock, how much of a call's time a candidate's room can skip without doing less
    of the task's work: the harness around each call (`harness_ms`: a module call, what wraps
    forward, the loop, the copy into the judge's buffer) and its share of what a batch costs
    besides its calls (`fixed_ms` over `calls`; the candidate's per call in batches is bounded
    by its larger batch less the reference's such cost, which a lean room does not pay). A room
    that writes its outputs straight into the judge's buffer still writes them, but with streaming
    stores that costs less than the copy (read back, written) it skips: red-team rooms doing
    eager's relu got 1.2-1.8x in batches (a lean loop of their own), and 1.2-1.8x again with
    streaming stores and padded smaller batches where only the smaller of forward and copy was
    withheld (2-core host, 2026-11-27). A gain over the reference within this is not credited
    (_credited). Where the batches did not run (calls long beside the door), it is the copy."""
    return max(0.0, harness_ms) + max(0.0, fixed_ms) / max(calls, 1)


def _interrupt_window():
    """A way to count the interrupts on the judge's core over a window of time: a function that
    opens a window and returns its closer, which returns (interrupts, wall ms); None where they
    cannot be counted (the judge not on one core, no /proc/interrupts)."""
    from stitch_mcp.cpusets import interrupts_on

    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    core = next(iter(cores)) if len(cores) == 1 else None
    if core is None or interrupts_on(core) is None:
        return None

    def open_window():
        n0, t0 = interrupts_on(core), time.perf_counter()

        def close() -> tuple[int, float] | None:
            n1, ms = interrupts_on(core), (time.perf_counter() - t0) * 1e3
            return None if n0 is None or n1 is None or n1 < n0 else (n1 - n0, ms)  # a read failed, a counter wrapped
        return close
    return open_window


def _count_window(lane: Lane, window: tuple[int, float] | None, cpu_ms: float, candidate: bool) -> None:
    """A window's interrupts into its lane's count; a candidate's window that idled most of its time
    (STORM_IDLE) is left out."""
    if window is not None and (not candidate or window[1] <= STORM_IDLE * cpu_ms + 1.0):
        lane.irq_windows.append(window)


# On the CPU clock, interrupts on the shared core are billed to whichever room runs (where the kernel
# does not account their time apart): a red-team room armed thousands of timers, 20-30 us apart, to
# expire while the reference's room ran (io_uring timeouts, no wakeup of its own), and got 1.2-1.7x
# with eager's own work (2-core host, 2026-11-27). The reference's windows (its timed calls and its
# batches, from the judge's asking to the answer) may take STORM_MARGIN more interrupts per ms than
# the candidate's (the host's ticks: 0.25 per ms in both on that host, busy or not; 1 per ms at
# most at HZ=1000) before the candidate earns no speedup. Timers expiring in its own windows while
# it runs bill itself, so what it gains is the difference of the two rates.
STORM_MARGIN = 2.0
# A candidate's window that idled most of its time (wall over this many times its CPU, and 1 ms) is
# left out of its rate: a red-team room slept 60-100 ms in its smaller batches while timers of its own
# expired on the idle core (billed to nobody), raising its rate to mask a storm on the reference's
# batches, 1.2-1.5x in about half its checks (session 21).
STORM_IDLE = 2.0


def interrupt_rates(t: Timed) -> tuple[float, float] | None:
    """Interrupts per wall ms on the judge's core in the reference's windows and the candidate's."""
    def rate(lane: Lane) -> float:
        n, ms = sum(w[0] for w in lane.irq_windows), sum(w[1] for w in lane.irq_windows)
        return n / ms if ms > 0 else 0.0
    if not t.reference.irq_windows or not t.candidate.irq_windows:
        return None
    return rate(t.reference), rate(t.candidate)


def _credited(candidate_ms: float, reference_ms: float, skippable: float) -> float:
    """A candidate's time per call raised by up to `skippable` (skippable_harness_ms), never above the
    reference's: a gain within what a room can skip of its harness is not credited."""
    return max(candidate_ms, min(reference_ms, candidate_ms + skippable))


def _host_busy() -> bool:
    """Whether the host had more runnable work than this process's cores over the last minute (its
    load average): other work then cuts batches at will, and a quiet host's grain no longer holds."""
    try:
        return os.getloadavg()[0] > len(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return False


def _batch_call_ms(t: Timed, device: str) -> float:
    """The call a batch is sized on: the candidate's room's time on a GPU (its calls launched back
    to back take about that). On a CPU, where each call is done before the next, the longest of the
    candidate's room, its call's bracket and the reference's room, twice (a call and its copies):
    a room claiming a fraction of its time got batches of 40-140 calls of eager's relu, which the
    scheduler cut on a loaded 2-core host in every round, the reference's more than the candidate's,
    and the batches found it 10x faster than eager (2026-11-26)."""
    b_room = statistics.median(t.candidate.room_ms)
    if device == "cuda":
        return b_room
    return 2 * max(b_room, statistics.median(t.candidate.wall_ms) - _door_ms(t), statistics.median(t.reference.room_ms))


def _batch_rounds(p: Prepared, rooms: dict[str, RoomClient], t: Timed, buffers: tuple, flush,
                  walls: dict[tuple[str, int], list[float]], idle: list[float]) -> None:
    """BATCH_ROUNDS rounds of batches of k/4 and k calls, each room in turn, into `walls`; the CPU
    the candidate's room used while not asked anything, and how long that was, added to `idle`
    (IDLE_CPU_SHARE). Without a candidate in `rooms`, eager's lanes alone."""
    slots, k = buffers
    used = rooms["candidate"].cpu_meter() if "candidate" in rooms else None
    for _ in range(BATCH_ROUNDS):
        for n in (k // 4, k):
            cpu_from, wall_from = used and used(), time.perf_counter()
            calls, _ = _batch_calls(p, *slots["reference"], n)
            walls.setdefault(("reference", n), []).append(_run_batch(p, rooms["reference"], Batch(calls=calls), flush))
            walls.setdefault(("copy", n), []).append(
                _run_batch(p, rooms["reference"], Batch(calls=calls, forward=False), flush))
            if used is None:  # eager's lanes alone (eager_batches_alone)
                continue
            calls, seeds = _batch_calls(p, *slots["candidate"], n)
            idle[0] += (used() - cpu_from) * 1e3
            idle[1] += (time.perf_counter() - wall_from) * 1e3
            walls.setdefault(("candidate", n), []).append(_run_batch(p, rooms["candidate"], Batch(calls=calls), flush))
            _check_two(p, t, seeds, slots["candidate"][1], k)


def _per_call(walls: dict[tuple[str, int], list[float]], k: int, idle: list[float], door: float | None) -> Batches:
    """Per-call times from the lowest batch of each size: the difference cancels the round trip.
    With `door` (on a CPU: how far one room's round trip may honestly exceed the other's), the
    candidate's is at least its larger batch less the reference's round trip and that: a room that
    idled through its smaller batches (asked for k/4 calls, it knows which) would otherwise shrink
    the difference at will. On a GPU, where an H100's honest relu failed that bound (its host work
    per batch is not the reference's), each room's larger batch over its calls is kept as well
    (candidate_whole_ms, reference_whole_ms), and _gpu_batch_bound allows for the round trips."""
    lowest = {key: min(times) for key, times in walls.items()}
    per_call = {lane: _lane_per_call(lowest, lane, k) for lane in ("candidate", "reference", "copy")}
    candidate = per_call["candidate"]
    if door is not None:
        round_trip = lowest[("reference", k // 4)] - k // 4 * per_call["reference"]
        candidate = max(candidate, (lowest[("candidate", k)] - round_trip - door) / k)
    spread = sum(sorted(walls[("copy", n)])[:2][-1] - lowest[("copy", n)] for n in (k // 4, k)) / (k - k // 4)
    return Batches(calls=k, candidate_ms=candidate, reference_ms=per_call["reference"], copy_ms=per_call["copy"],
                   copy_spread_ms=spread, idle_cpu_ms=idle[0], idle_wall_ms=idle[1],
                   candidate_whole_ms=lowest[("candidate", k)] / k, reference_whole_ms=lowest[("reference", k)] / k,
                   rounds=len(walls[("reference", k)]))


def _batch_buffers(p: Prepared, rooms: dict[str, RoomClient], t: Timed,
                   k: int) -> dict[str, tuple[list, list]] | None:
    """Each room's shared slots for k calls' inputs and outputs ({room: (inputs, outputs)}, in its
    own buffers: RoomBuffers, so up to BATCH_BYTES for each room on a CPU, _batch_size); None where
    a batch of even half the smallest size would not fit."""
    if k < BATCH_CALLS[0] // 2:
        return None
    laid: dict[int, tuple[list, list]] = {}
    for which in rooms:
        own = p.of(rooms[which])
        if id(own) not in laid:  # on a GPU the rooms share one set
            laid[id(own)] = (own.arena.layout([s[1] if s else None for s in own.inputs] * k),
                             own.arena.layout([o if isinstance(o, p.torch.Tensor) else None for o in p.templates] * k))
    for room in rooms.values():
        attach(p, room)
    return {which: laid[id(p.of(rooms[which]))] for which in rooms}


def _batch_size(t: Timed, call_ms: float, batch_ms: float) -> int:
    """Calls in a batch of `batch_ms` of calls of `call_ms`, within BATCH_CALLS and BATCH_BYTES."""
    return int(min(max(batch_ms / max(call_ms, 1e-4), BATCH_CALLS[0]), BATCH_CALLS[1],
                   BATCH_BYTES // max(t.in_bytes + t.out_bytes, 1)))


def _check_two(p: Prepared, t: Timed, seeds: list[int], outs: list[Any], k: int) -> None:
    """Two calls of a candidate batch, drawn after it ran, kept to be compared with the reference."""
    n_out = len(outs) // k
    for j in [secrets.randbelow(len(seeds)) for _ in range(2)]:
        _sample_outputs(p, t, seeds[j], outs[j * n_out:(j + 1) * n_out])
        t.must_check.append(seeds[j])


def _batch_calls(p: Prepared, ins: list[Any], outs: list[Any], n: int) -> tuple[list[Call], list[int]]:
    """n calls, each with fresh inputs (a seed drawn now) in its own slice of the batch buffers."""
    from stitch_mcp.loader import make_inputs

    n_in, n_out = len(p.inputs), len(p.templates)
    calls, seeds = [], []
    for j in range(n):
        seeds.append(secrets.randbelow(2 ** 31 - 1))
        args = put_inputs(p, make_inputs(p.ref_mod, p.device, seeds[-1]), ins[j * n_in:(j + 1) * n_in])
        calls.append(Call(args=args, outputs=[s[0] if s else None for s in outs[j * n_out:(j + 1) * n_out]]))
    return calls, seeds


def _run_batch(p: Prepared, room: RoomClient, batch: Batch, flush) -> float:
    """The judge's time of one batch: from telling the room its calls to its answer to Run. A room
    that did its calls as soon as it was told them would otherwise do them before the clock (the
    telling, the same in every lane, cancels out of the per-call differences)."""
    if flush is not None:
        flush.zero_()
    sync(p)
    h0 = time.perf_counter()
    room.ask(batch)
    room.ask(Run())
    return (time.perf_counter() - h0) * 1e3


def batch_bound(t: Timed, bb: Batches | None, device: str) -> tuple[float, bool, dict[str, Any]]:
    """The candidate's per-call time the batches imply (0.0 where they say nothing), whether that
    contradicts its room times (see BATCH_SLACK, CPU_BATCH_SLACK), and what they measured. Where
    eager's lanes were timed again alone (eager_batches_alone), the batches are read with eager's
    lanes of each phase: the lower speedup is what they verify, and a time is called false only
    where both readings contradict it. The candidate's lanes ran beside eager's first phase only,
    so on a host whose work per call drifted between the phases the second reading is off by that."""
    if bb is None:
        return 0.0, False, {}
    info: dict[str, Any] = {"calls": bb.calls, "rounds": bb.rounds, "candidate_ms": bb.candidate_ms,
                            "reference_ms": bb.reference_ms, "copy_ms": bb.copy_ms,
                            "copy_spread_ms": bb.copy_spread_ms, "busy_host": bb.busy_host,
                            "idle_cpu_ms": bb.idle_cpu_ms, "idle_wall_ms": bb.idle_wall_ms,
                            "reference_alone_ms": bb.alone and bb.alone.call_ms,
                            "copy_alone_ms": bb.alone and bb.alone.copy_ms, "speedup_beside": bb.speedup_beside}
    a_room, b_room = statistics.median(t.reference.room_ms), statistics.median(t.candidate.room_ms)
    if device == "cuda":
        return _gpu_batch_bound(a_room, b_room, bb, info)
    verified = []
    for eager in _eager_phases(bb):
        a_fwd, b_fwd = eager.forward_ms, bb.candidate_ms - eager.copy_ms
        short = a_fwd < 0.1 * eager.call_ms  # forward lost in the room's own overhead: says nothing
        lost = ("forward is too short beside the room's own work per call on this host" if short else
                _lost_in_noise(a_fwd, a_room, b_fwd, bb))
        if lost:  # where eager's lanes ran twice, one reading that says nothing leaves the other unchecked
            info.update(note=f"not used: {lost}" + ("" if short else " (the host too busy for its clock)"),
                        unverified=not short or bb.alone is not None)
            return 0.0, False, info
        verified.append(a_fwd / max(b_fwd, 1e-9))  # the speedup over the reference, on the judge's clock
    info["speedup"] = min(verified)
    claimed = a_room / b_room if b_room > 0 else math.inf
    return a_room / min(verified), claimed > CPU_BATCH_SLACK * max(verified), info


# What one call's host dispatch took on idle H100 hosts (2026-11-27: torch.relu 8-15 us, torch.mm
# 15-28 us, a copy 7-12 us): a candidate's forward in batches within this may be all dispatch.
GPU_DISPATCH_MS = 0.03


def _gpu_batch_bound(a_room: float, b_room: float, bb: Batches, info: dict[str, Any]) -> tuple[float, bool, dict]:
    """batch_bound on a GPU. A batch's window holds the telling of its calls (the judge serializing
    them, the room parsing them), then each call's forward and copy: the host's work or the GPU's,
    whichever is longer. Less eager's copies, a forward there is its dispatch or its kernel (H100
    hosts, 2026-11-27: eager's 4.2 us relu took 8-13 us a call, its 64 us matmul 45-60 us, the copy's
    ~11 us of host work hidden under it; the copy lane itself 28-175 us, mostly the telling).
    The speedup over eager there, each side less eager's copies, checks the room's; the candidate's
    forward is at least its larger batch, whole, less eager's round trip and the door's spread of it
    (no padding of its smaller batches, nor doing its k calls as one, shrinks that). Beyond
    BATCH_SLACK its times are false. The batches confirm nothing (unverified) where:
    - a forward is lost beside the copies: eager's, or the candidate's within their grain (as a room
      that does its calls as one, or writes its outputs itself, can make it);
    - eager's own forward there is over BATCH_SLACK times its kernel (`host_bound`): host work then
      weighs as much as kernels. An honest clamp was 0.53-0.66x eager in batches on a busy H100 host,
      both kernels 4.2 us; and eager's relu batches 36 us a call beyond their copies, disturbed, would
      have let a room forging its events at 21% through (4.7x, call 2 of session 22 replayed).
    Where they contradict the room's times, they do not call them false where:
    - the claim is within the batches' noise (their grain, each way, and its difference of two sizes);
    - the candidate's forward there is within what one call's host dispatch takes (GPU_DISPATCH_MS):
      an honest fast kernel whose dispatch outweighs it, beside an eager whose kernel outweighs its own.
    In all these the candidate is given no speedup over eager, and nothing is called false.
    Left open: a room that skips the copies (writing its outputs itself) and paces its calls can
    bring its forward there down to its real one less the copies' cost and the round-trip allowance
    (28-175 us and 20-30 us a call on H100 hosts), so a kernel no longer than those gains up to what
    it claims. A window without the telling would leave it far less to skip (needs inputs a room
    cannot read before the clock; not tried). Also open (red-team readings of H100 lanes, not run):
    a room that pads its smaller batches gets a claim of 1.5-2x through on eager's own 64 us matmul
    (its whole batch less 1.5 times eager's round trip, then BATCH_SLACK on that); and a kernel
    slower than eager's, whose room makes the batches say nothing (slowing eager's batches beside
    it until host_bound), is credited at eager's time, 1.0x, where the batches would have named it.
    A room that keeps the GPU busy while eager's batches run (the contexts take turns) raises eager's
    forward there, or, slowing only eager's smaller batches, its round trip: eager_batches_alone
    times eager's lanes again once it is gone, and each reading (_gpu_reading, with eager's lanes of
    one phase) must allow a claim for it to stand: the lower speedup is the one verified. Where the
    readings disagree about it (one allows it, the other not), the lower reading stands (`lowered`):
    it is called false only where both contradict it, as an honest room on a host whose work per
    call drifted between the phases could be otherwise (eager's copies 77 us a call beside it, 42
    alone, on an H100: an honest matmul done once against twice read 1.97x and 1.30x). Crediting
    the lower is as safe as where they agree: the room cannot lower eager's lanes alone, and its own
    batches only bound its forward from above. It was credited 1.0x before (session 29)."""
    grain = _grain(bb)
    readings = sorted((_gpu_reading(a_room, bb, eager, grain) for eager in _eager_phases(bb)),
                      key=lambda reading: reading.verified)
    low, high = readings[0], readings[-1]
    claimed = a_room / b_room if b_room > 0 else math.inf
    info.update(whole_ms=bb.candidate_whole_ms, host_bound=any(r.host_bound for r in readings))
    lost = next((r.lost for r in readings if r.lost), "")
    if not lost and claimed > BATCH_SLACK * low.verified:
        if claimed <= BATCH_SLACK * high.verified:
            info.update(speedup=low.verified, lowered=True,
                        note=f"its calls back to back were {low.verified:.2f}x eager's with eager's batches timed "
                        f"again alone and {high.verified:.2f}x beside it, against {claimed:.2f}x in its room: the two "
                        "readings disagree (the host's work per call moved between the phases, or the room slowed "
                        "eager's lanes beside it), and the lower one stands")
            return a_room / low.verified, False, info
        if claimed <= BATCH_SLACK * high.leeway:
            lost = f"its calls back to back were {high.verified:.2f}x eager's, not {claimed:.2f}x, within their noise"
        elif high.b_fwd <= GPU_DISPATCH_MS:
            lost = (f"its calls back to back were {high.verified:.2f}x eager's, not {claimed:.2f}x, but took "
                    f"{high.b_fwd:.4f} ms each beyond the copies, no more than one call's host dispatch can take")
    if lost:
        info.update(unverified=True, note=f"not used: {lost}")
        return 0.0, False, info
    info["speedup"] = low.verified
    return a_room / low.verified, claimed > BATCH_SLACK * low.verified, info


@dataclass
class _GpuReading:
    """The GPU batches read with eager's lanes of one phase (_gpu_batch_bound)."""

    verified: float  # eager's forward over the candidate's
    b_fwd: float  # the candidate's forward per call
    leeway: float  # the most the speedup could be within the batches' noise
    host_bound: bool
    lost: str  # why this reading says nothing ('' where it does)


def _gpu_reading(a_room: float, bb: Batches, eager: EagerLanes, grain: float) -> _GpuReading:
    """One reading of the GPU batches (see _gpu_batch_bound)."""
    a_fwd = eager.forward_ms
    b_fwd = max(bb.candidate_ms, bb.candidate_whole_ms - (1 + DOOR_SPREAD) * eager.round_trip_ms) - eager.copy_ms
    host_bound = a_fwd > BATCH_SLACK * a_room
    lost = ("eager's calls took no longer than the copies around them" if a_fwd < 0.1 * eager.call_ms else
            "the candidate's calls took no longer than the copies around them, within their grain"
            if b_fwd <= grain else
            f"eager's own forward took {a_fwd:.4f} ms a call there against its kernel's {a_room:.4f} ms: at calls "
            "this short (or on a host this busy), batches time host work, not kernels" if host_bound else "")
    leeway = (a_fwd + grain) / max(bb.candidate_ms - eager.copy_ms - grain, 1e-9)
    return _GpuReading(a_fwd / max(b_fwd, 1e-9), b_fwd, leeway, host_bound, lost)


def _grain(bb: Batches) -> float:
    """Per call, below what a forward in batches is not told from the copies' noise: their rounds'
    spread, and on a busy host a tenth of the candidate's batch call (the copies' rounds there can
    all be cut alike)."""
    return max(bb.copy_spread_ms, 0.1 * bb.candidate_ms if bb.busy_host else 0.0)


def _lost_in_noise(a_fwd: float, a_room: float, b_fwd: float, bb: Batches) -> str:
    """On a CPU, why the batches' forwards are noise ('' where they are not): the candidate's within
    the copies' own grain (_grain), or the reference's above its own single calls (which
    pay for waking on the door, and a batch's do not): rounds all cut by the scheduler, on a loaded
    2-core host one lane's more than the other's (2026-11-26). A fast honest forward, small beside
    its copies, stands on a quiet host. On a GPU: _gpu_batch_bound."""
    if b_fwd <= _grain(bb):
        return "the candidate's batches took no longer than the copies alone, within their grain"
    if a_fwd > CPU_BATCH_CUT * a_room:
        return "the reference's calls took longer in batches than alone"
    return ""


SAMPLED = 4096  # elements of each output kept from every timed call, at places drawn after the call


def _after_call(p: Prepared, t: Timed, room: RoomClient, seed: int) -> None:
    """The judge's work after a room's timed call, the same after either room's: the candidate's
    outputs sampled into `t` to be checked, the reference's sampled and dropped. On one core the
    judge's work between calls slows the next call (its caches): sampled after the candidate's calls
    only, an honest candidate running eager's own relu alone took 1.1-2.3x eager alone's time at
    their 10% quantile in 10 of 12 checks beside two busy loops, and about 1.0x with neither sampled
    (2-core host, 2026-11-28)."""
    if room.role == "candidate":
        _sample_outputs(p, t, seed)
    else:
        _sample_outputs(p, Timed(Lane(), Lane()), seed, p.of(room).outputs)


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


def _quantile(values: list[float], q: float) -> float:
    """The value at quantile q of `values` (its lowest at q = 0)."""
    return sorted(values)[int(q * len(values))]


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


# On the CPU clock, the candidate's processes may use this share of the CPU of its calls, and
# IDLE_CLOCK_MS, between them beyond what the reference's used between its own; past that its times
# earn no speedup. Below it, that CPU is charged to its calls.
IDLE_CLOCK_MS = 5.0
# On the CPU clock, the candidate's calls may wait (blocked, or for the core) this many times what the
# reference's waits predict for calls of their CPU; beyond it the waiting is charged to them.
WAIT_SLACK = 1.5


def _door_cpu(reference: Lane) -> float:
    """On the CPU clock, what a call costs a room besides its forward and writing its outputs to the
    judge's buffers (being told the call, answering it): the median of _door_samples."""
    return statistics.median(_door_samples(reference))


def _door_samples(reference: Lane) -> list[float]:
    """Per call, the reference room's CPU less its own account of its forward and of writing its
    outputs (the task's code, not the candidate's, runs there)."""
    return [c - o - w for c, o, w in zip(reference.cpu_ms, reference.own_cpu_ms, reference.copy_cpu_ms)]


def _clock(lane: Lane, reference: Lane) -> list[float]:
    """A lane's time per call on the clock its check is judged by: on the CPU clock, its processes'
    CPU less the door's (`reference`: the lane that tells what the door costs), and never below
    what the reference took to write the outputs (a room cannot skip that work, only move it: into
    its forward, or by answering its door some cheaper way); else the room's own times."""
    if not lane.cpu_ms:
        return lane.room_ms
    door, floor = _door_cpu(reference), statistics.median(reference.copy_cpu_ms)
    return [max(c - door, floor) for c in lane.cpu_ms]


def _blocked_ms(lane: Lane) -> list[float]:
    """Per call on the CPU clock, the wall time that neither the room's processes nor the judge's
    thread spent running or waiting for the core: its wall time less its CPU, less the judge's own
    wait for the core beyond that CPU (the judge waits so while the room runs, and after the room
    answered, behind other work on the core: a busy loop's turn of 1-6 ms, in about half the calls
    of some checks beside two busy loops, 2026-11-27). What is left is waiting on something else."""
    queued = lane.judge_queued_ms or [0.0] * len(lane.wall_ms)
    return [w - c - max(0.0, q - c) for w, c, q in zip(lane.wall_ms, lane.cpu_ms, queued)]


# Waits are compared at the mean of each lane's lowest WAIT_KEPT share of calls: a median jumps by a
# whole busy-loop turn where the share of calls that waited behind one crosses half (an honest
# candidate was charged 1.4 ms a call so, 2026-11-27), and would let a candidate wait in 49% of its
# calls unseen.
WAIT_KEPT = 0.9


def _waited_ms(t: Timed) -> float:
    """On the CPU clock, how long each candidate call waited (_blocked_ms) beyond WAIT_SLACK times
    what the reference's calls predict for its CPU: work handed to something its cgroup does not
    count (a service it reaches), which the CPU clock alone would not see."""
    a, b = t.reference, t.candidate
    a_wait, b_wait = _low_mean(_blocked_ms(a), WAIT_KEPT), _low_mean(_blocked_ms(b), WAIT_KEPT)
    a_cpu, b_cpu = statistics.median(a.cpu_ms), statistics.median(b.cpu_ms)
    expected = max(a_wait, a_wait * b_cpu / a_cpu if a_cpu > 0 else 0.0)
    return max(0.0, b_wait - WAIT_SLACK * expected)


def _low_mean(values: list[float], share: float) -> float:
    """The mean of the lowest `share` of `values` (at least one)."""
    kept = sorted(values)[:max(1, round(len(values) * share))]
    return sum(kept) / len(kept)


def _charged_clock(t: Timed) -> tuple[list[float], tuple[float, float]]:
    """On the CPU clock, the candidate's time per call (_clock) with what is charged to each call
    added: its processes' CPU between calls beyond the reference's, and its waiting (_waited_ms);
    and those two charges."""
    a, b = t.reference, t.candidate
    idle, waited = _extra_idle_ms(t) / len(b.cpu_ms), _waited_ms(t)
    return [c + idle + waited for c in _clock(b, a)], (idle, waited)


def _extra_idle_ms(t: Timed) -> float:
    """The CPU the candidate's processes used between its calls beyond what the reference's did."""
    return max(0.0, t.candidate.idle_cpu_ms - t.reference.idle_cpu_ms)


def judge_cpu_clock(res: dict[str, Any], t: Timed) -> None:
    """On a CPU where both rooms are held to the judge's core (stitch_mcp.cpusets), each call is
    timed by the CPU its room's processes used (the kernel's accounting of the slot's cgroup, read by
    the judge before and after) less what the door costs the reference's room (_clock): the wall
    clock there also counts the turns other work takes on that core, the CPU clock does not.
    Nothing the candidate says is used. Its threads, children and helpers are all in the cgroup (on
    one core more threads gain nothing); what it does between its calls beyond the reference's own
    leftovers, and what it waits for beyond what the reference's calls wait, is charged to its
    calls (_waited_ms), and CPU between its calls beyond IDLE_CLOCK_MS earns it no speedup."""
    a, b = t.reference, t.candidate
    eager, cand, charged = _clock(a, a), *_charged_clock(t)
    stats = _stats(cand)
    stats["host_median_ms"] = statistics.median(b.wall_ms)
    door = _door_cpu(a)
    batch = _cpu_batch_bound(stats, statistics.median(eager), t.cpu_batches, door)
    # where the door mattered but no batch fitted, a room answering it more cheaply gains nothing either
    skippable = batch.get("harness_ms") if batch else (
        skippable_harness_ms(statistics.median(a.copy_cpu_ms)) + (door if needs_cpu_batches(t) else 0.0))
    res["timing"] = {"method": "each room's CPU time per call (its cgroup's, read by the judge), less the door's; "
                               "eager interleaved with the candidate in blocks of %d; fresh inputs every call" % BLOCK,
                     "candidate": stats, "eager": _stats(eager),
                     "eager_block_spread": _block_spread(_block_medians(eager)),
                     "candidate_block_spread": _block_spread(_block_medians(cand)),
                     "bracket": {"candidate_ms": stats["median_ms"], "door_overhead_ms": door,
                                 "noise_ms": _iqr(_door_samples(a)),
                                 "after_ms": 0.0, "reference_after_ms": 0.0},
                     "harness_ms": skippable, "harness_withheld": bool(batch.pop("harness_withheld", False))}
    if sum(charged) > 0:  # which of the two: a room working between calls, or waiting on the host
        res["timing"]["method"] += (f"; {sum(charged):.4f} ms charged to each candidate call beyond the reference's "
                                    f"({charged[0]:.4f} ms for its CPU between calls, {charged[1]:.4f} ms for its "
                                    "waiting)")
    if batch:
        res["timing"]["batch"] = batch
        sizes = f"{batch['calls']} calls" + (f" the candidate's, {batch['reference_calls']} the reference's"
                                             if batch.get("reference_calls") else "")
        res["timing"]["method"] += (f"; calls also timed in batches of back-to-back calls ({sizes}) on the rooms' "
                                    "CPU (the door's cost cancels there)")
    res["checks_run"].append("timing_cpu_clock")
    rates = interrupt_rates(t)
    if rates:
        res["timing"]["interrupts_per_ms"] = list(rates)
    if not _between_calls(res, t, "while the judge wrote inputs and timed the reference") and \
            statistics.median(b.room_ms) < 0.9 * statistics.median(b.own_cpu_ms) - 0.002:
        # an honest room's clock over its forward counts at least that forward's thread CPU
        res["findings"].append(integ.finding(
            "timing_contradicted", f"the room reported {statistics.median(b.room_ms):.4f} ms per call, less than "
            f"the {statistics.median(b.own_cpu_ms):.4f} ms of CPU it says its own thread used in them: a forged "
            "clock (not used: the candidate is timed by its processes' CPU)", severity="warning", confidence="probable"))
    if stats["median_ms"] <= 0:  # no work takes no time; too short to tell: as eager
        _rescale(stats, statistics.median(eager), 0.0)


def _between_calls(res: dict[str, Any], t: Timed, meanwhile: str) -> bool:
    """On the CPU clock, whether the candidate's lanes earn no speedup for what happened between its
    calls (`meanwhile`: what the judge did then): interrupts on the core billed to the reference's
    calls beyond STORM_MARGIN, or its processes' CPU beyond IDLE_CLOCK_MS and IDLE_CPU_SHARE of its
    calls' over the reference's. Sets no_speedup and the finding."""
    a, b = t.reference, t.candidate
    rates, extra_idle = interrupt_rates(t), _extra_idle_ms(t)
    if rates and rates[0] - rates[1] > STORM_MARGIN:
        res["timing"]["no_speedup"] = "interrupt_storm"
        res["findings"].append(integ.finding(
            "interrupt_storm", f"the judge's core took {rates[0]:.1f} interrupts per ms while the reference's room "
            f"ran, against {rates[1]:.1f} while the candidate's did: interrupts (timers it armed, most likely) "
            "billed to the reference's time; its times earn no speedup", severity="warning", confidence="probable"))
        return True
    if extra_idle > max(IDLE_CLOCK_MS, IDLE_CPU_SHARE * sum(b.cpu_ms)):
        res["timing"]["no_speedup"] = "work_while_idle"
        res["findings"].append(integ.finding(
            "work_while_idle", f"the candidate's processes used {b.idle_cpu_ms:.1f} ms of CPU in the "
            f"{t.idle_wall_ms:.0f} ms between its calls ({meanwhile}; the reference's room {a.idle_cpu_ms:.1f} ms "
            f"between its own), against {sum(b.cpu_ms):.1f} ms in them: work ahead of its timed calls or after "
            "answering them; its times earn no speedup", severity="warning", confidence="probable"))
        return True
    return False


def _cpu_batch_bound(stats: dict[str, float], eager_ms: float, batches: Batches | None,
                     door_ms: float) -> dict[str, Any]:
    """On the CPU clock, where the batches ran (needs_cpu_batches): the candidate timed at eager's
    time over the speedup in batches, where a cheaper door cannot help, but at no more than
    1 + CPU_BATCH_LOWERS times the speedup of its single calls, in which no gain is credited within
    what a room can skip there (`door_ms`, the reference's door, and the harness): a room sees all
    of a batch's inputs before it runs them and can fuse calls across it, and a room answering its
    door more cheaply than the reference's makes its single calls look faster; together they got
    1.7x with eager's own work (red team, 2026-11-27). A gain within the harness is withheld in the
    batches too (skippable_harness_ms). What they measured, for the report (`room_ms` where they
    raised its time beyond CPU_BATCH_AGREES)."""
    if batches is None:
        return {}
    b = batches
    skippable = skippable_harness_ms(b.copy_ms, b.fixed_ms, b.calls)
    # at or below nothing, its smaller batches were padded (honest calls cost something), or the
    # reference's were disturbed: no speedup
    broken = b.candidate_ms <= 0 or b.reference_ms <= 0
    credited = b.reference_ms if broken else _credited(b.candidate_ms, b.reference_ms, skippable)
    speedup = 1.0 if broken else b.reference_ms / max(credited, 1e-9)
    single, implied = stats["median_ms"], eager_ms / speedup
    single_credited = _credited(single, eager_ms, door_ms + skippable)
    timed = max(implied, single_credited / (1 + CPU_BATCH_LOWERS))
    info: dict[str, Any] = {"calls": b.calls, "reference_calls": b.reference_calls, "rounds": b.rounds,
                            "candidate_ms": b.candidate_ms, "reference_ms": b.reference_ms, "copy_ms": b.copy_ms,
                            "harness_ms": skippable,
                            "speedup": speedup, "idle_cpu_ms": b.idle_cpu_ms, "idle_wall_ms": 0.0,
                            "single_credited_ms": single_credited, "skippable_ms": door_ms + skippable,
                            "harness_withheld": (not broken and credited > b.candidate_ms) if timed == implied
                            else single_credited > single}
    info["note"] = "; ".join(filter(None, [
        timed == implied and broken and "the batches came out at or below nothing (padded smaller batches, or "
        "the reference's disturbed): no speedup in them",
        timed == implied and info["harness_withheld"] and (
            f"speedup in batches taken at {b.reference_ms:.4f} / {credited:.4f} ms: a gain over the reference "
            f"within what its harness costs per call ({skippable:.4f} ms) is not credited"),
        f"the candidate is timed at eager's time over its speedup in batches on the rooms' CPU ({timed:.4g} ms "
        f"against {single:.4g} ms in single calls)" if timed == implied else
        f"the candidate is timed at {timed:.4g} ms: no more than {1 + CPU_BATCH_LOWERS:.2g}x the speedup of its "
        f"single calls ({single:.4g} ms, credited at {single_credited:.4g} ms: no gain within what a room can skip "
        f"of its door and harness, {door_ms + skippable:.4g} ms a call), although its batches show "
        f"{speedup:.3g}x; a room can fuse calls across a batch and answer its door more cheaply. Time a larger "
        "problem (calls of several milliseconds) to see more of its speedup on this clock"]))
    if timed == implied and timed > (1 + CPU_BATCH_AGREES) * single:  # the batches raised it (check._eager_room)
        info["room_ms"] = single
    _rescale(stats, timed, single)
    return info


def settle_cpu_clock(res: dict[str, Any]) -> None:
    """On the CPU clock, once eager's time is final (baselines, which may take eager alone and carry
    the batches' speedup over): no speedup where a finding said so (no_speedup), and where the
    batches did not run, no gain over eager within harness_ms (skippable_harness_ms; the batches'
    speedup already leaves it out)."""
    timing = res["timing"]
    cand, eager = timing["candidate"], timing["eager"]["median_ms"]
    if timing.get("no_speedup"):
        _rescale(cand, max(cand["median_ms"], eager), cand["median_ms"])
        return
    if timing.get("batch") or not timing.get("harness_ms"):
        return
    credited = _credited(cand["median_ms"], eager, timing["harness_ms"])
    if credited > cand["median_ms"]:
        timing["harness_note"] = (f"the candidate's {cand['median_ms']:.4g} ms per call is credited at {credited:.4g} "
                                  f"ms: a gain over eager within what the harness costs a room per call "
                                  f"({timing['harness_ms']:.4g} ms, which a room can skip doing the same work) is "
                                  "not credited")
        timing["harness_withheld"] = True
        _rescale(cand, credited, cand["median_ms"])


def _block_medians(times: list[float]) -> list[float]:
    return [statistics.median(times[i:i + BLOCK]) for i in range(0, len(times) - BLOCK + 1, BLOCK)]


def judge_times(res: dict[str, Any], p: Prepared, t: Timed, batches: Batches | None = None) -> None:
    """The candidate room's times stand only where the judge's clock agrees. The reference's room
    is the same kind of process doing the same kind of call at the same moments, so its wall time
    minus its own time is the door's honest overhead, and the judge's work after its calls is what
    that work costs when nothing is left running. Where the candidate's wall time minus that
    overhead (plus any slowdown of the judge's own work after its calls) exceeds its own times by
    more than the overhead's own jitter, the judge's estimate replaces them and a finding says so.
    For calls too short for that, `batches` (see BATCH_MS) bound the time from below; on a CPU, where
    a busy host made them noise, a room is given no speedup the bracket cannot see (_unseen_capped).
    On the CPU clock: judge_cpu_clock."""
    if t.cpu_clock:
        judge_cpu_clock(res, t)
        return
    a, b = t.reference, t.candidate
    b_room = statistics.median(b.room_ms)
    a_over = _door_ms(t)
    noise = door_allowance(t, p.device)
    bracket = statistics.median([w - a_over for w in b.wall_ms])
    a_after, b_after = statistics.median(a.after_ms or [0.0]), statistics.median(b.after_ms or [0.0])
    deferred = max(0.0, b_after - a_after - max(0.05, 0.25 * a_after))
    estimate = max(b_room, bracket) + deferred
    if estimate - b_room <= max(noise, 0.1 * estimate) and b_room > 0:  # within the door's jitter
        estimate = b_room
    implied, contradicted, batch_info = batch_bound(t, batches, p.device)
    # On a CPU the batches time the same work as the room, more steadily (CPU_BATCH_SLACK): where
    # one call's bracket agrees with the room, they raise its time to theirs without a finding, and
    # call it false only beyond that slack. They never lower it: the reference's batches ran beside
    # the candidate's room, which could have slowed them (timed again alone, where they checked the
    # claim, the lower speedup of the two readings stands: batch_bound).
    on_batches = not contradicted and (estimate <= b_room and _batches_raise(implied, b_room, p.device)
                                       or batch_info.get("lowered", False))
    worked_idle = _worked_idle(batches)
    capped = not worked_idle and _unverified(batch_info) and estimate <= b_room
    if worked_idle:
        estimate = max(estimate, statistics.median(a.room_ms))
    elif on_batches:
        estimate = max(estimate, implied)
    elif capped:  # neither one call's bracket nor the batches could check the room: no speedup it cannot see
        estimate = _unseen_capped(b_room, bracket, noise, statistics.median(a.room_ms), p.device)
    elif contradicted:
        estimate = max(estimate, implied)
    if b_room <= 0 and estimate <= 0:  # no work takes no time; too short for the judge to tell: as eager
        estimate = statistics.median(a.room_ms)
    res["timing"] = _bracket_report(p, t, {"candidate_ms": bracket, "door_overhead_ms": a_over, "noise_ms": noise,
                                           "after_ms": b_after, "reference_after_ms": a_after})
    cand = res["timing"]["candidate"]
    if batch_info:
        res["timing"]["batch"] = batch_info
        res["timing"]["method"] += (f"; calls this short also timed in batches of {batches.calls} back-to-back "
                                    "calls on the judge's clock")
    res["checks_run"].append("timing_bracket")
    if worked_idle:
        if estimate > b_room:
            _rescale(cand, estimate, b_room)
        res["findings"].append(integ.finding(
            "work_while_idle", f"the candidate's process used {batches.idle_cpu_ms:.0f} ms of CPU in the "
            f"{batches.idle_wall_ms:.0f} ms it had not been asked anything (while the judge wrote inputs and timed "
            "the reference): work ahead of its timed calls, or against the reference's; its times earn no speedup",
            severity="warning", confidence="probable"))
    elif on_batches and estimate > b_room:
        _rescale(cand, estimate, b_room)
        said = "the candidate is timed at eager's time over the speedup in batches, which is lower than its room's " \
               "single calls say"
        batch_info.update(room_ms=b_room, note=f"{batch_info['note']}: {said}" if batch_info.get("note") else said)
    elif capped and estimate > b_room:
        _rescale(cand, estimate, b_room)
        batch_info.update(room_ms=b_room, note=batch_info["note"] + "; the candidate's calls are too short for one "
                          "call's bracket too: it is given no speedup over eager that the bracket does not show, "
                          "whatever its jitter. " + ("Time a larger problem (kernels of tens of microseconds) to "
                                                     "see its speedup" if p.device == "cuda" else
                                                     "Check again on a quieter host"))
    elif estimate > b_room:
        _rescale(cand, estimate, b_room)
        why = (f"in batches of {batches.calls} back-to-back calls on the judge's clock it is "
               f"{batch_info['speedup']:.2f}x the reference, not the "
               f"{statistics.median(a.room_ms) / b_room if b_room > 0 else math.inf:.2f}x its room's times say "
               "(host work per call also shows there: after its last launch, or its wrapper's beyond its kernel)"
               if contradicted and estimate == implied else
               f"the judge's own work after each call took {b_after:.4f} ms instead of {a_after:.4f} ms: work "
               "went on after the room answered" if deferred else
               f"each call took {statistics.median(b.wall_ms):.4f} ms on the judge's clock, of which the door "
               f"itself takes {a_over:.4f} ms")
        res["findings"].append(integ.finding(
            "timing_contradicted", f"the room reported {b_room:.4f} ms per call but {why}; the candidate is timed "
            f"at the judge's estimate of {estimate:.4f} ms (work on an unjoined stream, deferred past the call, "
            "forged times, or host work per call beyond what its kernel takes)", severity="warning", confidence="probable"))


def _bracket_report(p: Prepared, t: Timed, bracket: dict[str, float]) -> dict[str, Any]:
    """judge_times' report before the judge's estimate is applied: each room's own times, the
    blocks' spread and the judge's bracket of the candidate's calls."""
    cand = _stats(t.candidate.room_ms)
    cand["host_median_ms"] = statistics.median(t.candidate.wall_ms)
    return {"method": ("CUDA events in each program's room, checked against the judge's clock; eager "
                       "interleaved with the candidate in blocks of %d; fresh inputs and an L2 flush "
                       "before every call" % BLOCK if p.device == "cuda" else
                       "each room's perf_counter, checked against the judge's clock; eager interleaved "
                       "with the candidate in blocks of %d; fresh inputs every call" % BLOCK),
            "candidate": cand, "eager": _stats(t.reference.room_ms),
            "eager_block_spread": _block_spread(t.reference.block_medians),
            "candidate_block_spread": _block_spread(t.candidate.block_medians), "bracket": bracket}


def _batches_raise(implied: float, b_room: float, device: str) -> bool:
    """Whether, on a CPU, the batches put the candidate slower than its room's time by more than
    CPU_BATCH_AGREES (then they raise it, and the rounds are run again first)."""
    return device != "cuda" and implied > (1 + CPU_BATCH_AGREES) * b_room


def _unseen_capped(b_room: float, bracket: float, noise: float, eager_ms: float, device: str = "cpu") -> float:
    """A room's time where nothing could check it: no faster than eager's unless one call's bracket,
    given all its jitter, shows it faster; no faster than the bracket allows where that shows it
    slower. On a GPU, no faster than eager's at all: the bracket's allowance there is eager's door,
    which a candidate's GPU work while not asked slows (the contexts take turns on the GPU), so that
    a red-team reading drove the bracket below nothing and the cap to any claim (2026-11-27)."""
    if device == "cuda":
        return max(b_room, eager_ms)
    return max(b_room, min(bracket + noise, max(eager_ms, bracket - noise)))


def _unverified(batch_info: dict[str, Any]) -> bool:
    """Whether the batches ran (one call's bracket being too coarse) and said nothing."""
    return bool(batch_info.get("unverified"))


def _worked_idle(batches: Batches | None) -> bool:
    """Whether the candidate's room used more CPU than IDLE_CPU_SHARE allows while it had not been
    asked anything. On a GPU, honest rooms used 0-10 ms in 1.8-4.2 s (H100 runs, 2026-11-26/27); a
    room spinning on the shared core while eager's batches run would slow them, loosening their bound."""
    return batches is not None and batches.idle_cpu_ms > max(IDLE_CPU_MS, IDLE_CPU_SHARE * batches.idle_wall_ms)


def _rescale(cand: dict[str, float], estimate: float, b_room: float) -> None:
    """The candidate's statistics moved to the judge's estimate of its median."""
    if b_room > 0:
        cand.update({k: cand[k] * estimate / b_room for k in ("median_ms", "iqr_ms", "min_ms")})
    else:
        cand.update({"median_ms": estimate, "min_ms": estimate})


def _block_spread(medians: list[float]) -> float:
    """Max/min of the per-block medians, minus 1: how much the time moved during the run."""
    return round(max(medians) / min(medians) - 1, 4) if medians and min(medians) > 0 else 0.0


CHECKED_CALLS = 16  # timed calls whose samples are compared with the reference, drawn after timing


def check_timed_outputs(res: dict[str, Any], p: Prepared, t: Timed) -> None:
    """Compare the samples of up to CHECKED_CALLS timed calls, chosen at random once timing is over,
    and of the calls drawn from each batch, with the reference run on the same inputs."""
    from stitch_mcp.loader import make_inputs

    seeds = [s for s in t.checked if s not in t.must_check]
    chosen = t.must_check + [seeds.pop(secrets.randbelow(len(seeds))) for _ in range(min(CHECKED_CALLS, len(seeds)))]
    bad = []
    for seed in chosen:
        inputs = make_inputs(p.ref_mod, p.device, seed)
        with p.torch.no_grad():
            expected = integ.flatten(reference_output(p.ref_model, inputs, clone=False))  # used once
        for k, (kept, ref) in enumerate(zip(t.checked[seed], expected)):
            if kept is None or not isinstance(ref, p.torch.Tensor):
                continue
            idx, got = kept
            atol, rtol = p.tols[k] if k < len(p.tols) else (p.atol, p.rtol)
            if not compare(got, ref.reshape(-1)[idx], atol, rtol)["ok"]:
                bad.append(seed)
                break
        del inputs, expected
    t.checked = {s: t.checked[s] for s in chosen}
    res["checks_run"].append("timed_outputs")
    if bad:
        res["findings"].append(integ.finding(
            "timed_output_mismatch", f"outputs of {len(bad)} of the {len(t.checked)} checked timed calls are wrong "
            "for the inputs they were given (results cached across calls, or work deferred past the call)"))


def physical_floor(res: dict[str, Any], p: Prepared, t: Timed, spec: dict[str, Any]) -> None:
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


def _both_alone(res: dict[str, Any], alone: Timed, after: Lane, beside_ms: float) -> None:
    """On the CPU clock, where eager alone came out lower than beside the candidate (`beside_ms`): the
    candidate's time lowered as much (rooms taking turns on one core evict each other's caches, each
    slower beside the other than alone), but no speedup beyond CPU_ALONE_SLACK over its speedup
    alone (_alone_speedup) against its better time, alone or in its single calls beside eager, so
    that a room slowing eager's calls beside it gains at most that. `alone`: both rooms timed alone in
    turns before the candidate's was closed (time_both_alone), the candidate's charged as beside
    eager; `after`: eager timed alone once it was. Where the batches ran, both times are credited as
    the single calls are (_cpu_batch_bound: no gain within the door and harness, which a lean room
    skips). What it did between its calls alone earns it no speedup as beside (_between_calls)."""
    timing = res["timing"]
    cand, batch = timing["candidate"], timing.get("batch") or {}
    cand_calls, eager_ms = _charged_clock(alone)[0], timing["eager"]["median_ms"]
    timing["candidate_alone"] = _stats(cand_calls)
    like_eager = eager_ms / _alone_speedup(cand_calls, _clock(alone.reference, alone.reference), _clock(after, after))
    own_alone = _credited(like_eager, eager_ms, batch.get("skippable_ms", 0.0))
    own = min(own_alone, batch.get("single_credited_ms", cand["median_ms"]))
    _rescale(cand, max(cand["median_ms"] * eager_ms / beside_ms, own / (1 + CPU_ALONE_SLACK)), cand["median_ms"])
    if batch.get("note"):  # its figures were the times beside eager
        batch["note"] += f"; then eager was timed alone, and the candidate with it, at {cand['median_ms']:.4g} ms"
    timing["eager_note"] += (f"; the candidate, timed alone too, in turns with eager "
                             f"({timing['candidate_alone']['median_ms']:.4g} ms), was given its speedup beside it, "
                             f"up to {1 + CPU_ALONE_SLACK:.3g}x its speedup alone")
    if not timing.get("no_speedup"):
        _between_calls(res, alone, "while eager was timed alone")


def _alone_speedup(cand: list[float], eager_in_turns: list[float], eager_after: list[float]) -> float:
    """The candidate's speedup alone, each lane at its ALONE_QUANTILE: over eager in turns with it
    (drift falls on both), but no more than over eager once its room was closed (where a live room's
    timers could not bill eager's calls) times 1 + ALONE_DRIFT, nor above 1.0 unless that says so
    too."""
    q = functools.partial(_quantile, q=ALONE_QUANTILE)
    in_turns, one_after = q(eager_in_turns) / max(q(cand), 1e-9), q(eager_after) / max(q(cand), 1e-9)
    return min(in_turns, max(one_after, 1.0), (1 + ALONE_DRIFT) * one_after)


def needs_compile_timed(spec: dict[str, Any], res: dict[str, Any]) -> bool:
    """Whether this judge times torch.compile's baseline itself: asked for, not cached for the
    device, and no baseline worker timing it (check.py's `compile_baseline_pending`)."""
    base = (spec.get("baselines_by_device") or {}).get(res.get("device", ""))
    return bool(spec.get("compare_compile")) and not (base and compile_baseline_known(base)) \
        and not spec.get("compile_baseline_pending")


def baselines(spec: dict[str, Any], res: dict[str, Any], p: Prepared, stage, alone: Lane | None,
              both_alone: Timed | None = None) -> None:
    """Eager: the interleaved time, or the reference's room timed alone after the candidate's room
    was ended where that is lower (slowing the reference's room down gains the candidate nothing);
    `alone` is None where the interleaved time agrees with the task's clean one (eager_agrees). On
    the CPU clock both rooms were timed alone too, in turns, before the candidate's was closed
    (`both_alone`, time_both_alone): _both_alone.
    torch.compile: cached per task by check.py; where it is not, timed by the baseline worker
    check.py started (`compile_baseline_pending`), else here, after the rooms are gone (compiled
    before the check's memory share where check.py asked for `compile_in_judge`: prepare._compile_ahead)."""
    timing = res["timing"]
    if alone is not None:
        alone_stats = _stats(_clock(alone, alone))
        timing["eager_alone"] = alone_stats
        beside_ms = timing["eager"]["median_ms"]
        if alone_stats["median_ms"] < beside_ms:
            timing["eager_note"] = (f"eager timed {timing['eager']['median_ms']:.4g} ms beside the candidate and "
                                    f"{alone_stats['median_ms']:.4g} ms alone; the lower is used")
            timing["eager"] = alone_stats
            batch, cand = timing.get("batch") or {}, timing["candidate"]
            if both_alone is not None:  # the CPU clock
                _both_alone(res, both_alone, alone, beside_ms)
            elif batch.get("room_ms") and batch.get("speedup"):  # the batches' speedup, or the room's if lower
                _rescale(cand, max(batch["room_ms"], alone_stats["median_ms"] / batch["speedup"]), cand["median_ms"])
            elif batch.get("room_ms") and batch.get("unverified"):  # capped as in judge_times, at eager's new time
                bracket = timing["bracket"]
                _rescale(cand, _unseen_capped(batch["room_ms"], bracket["candidate_ms"], bracket["noise_ms"],
                                              alone_stats["median_ms"], p.device), cand["median_ms"])
    if not spec.get("compare_compile"):
        return
    base = (spec.get("baselines_by_device") or {}).get(res.get("device", ""))
    if not base or not compile_baseline_known(base):
        if not needs_compile_timed(spec, res):
            timing["compile_note"] = "torch.compile's baseline is timed in a worker of its own (check.py)"
            return
        stage("timing", what="torch.compile")
        inputs = TimingInputs(p.ref_mod, p.device, spec["timing_seeds"])
        base = measure_baselines(p.ref_model, inputs, bench_options(spec, p.device, inputs), True, stage,
                                 p.compiled_ahead)
        timing["clean_baselines"] = base  # check.py caches these for the task
    timing["baselines_cached"] = "clean_baselines" not in timing
    timing["compiled"], timing["compile_note"] = base.get("compiled"), base.get("compile_note", "")
