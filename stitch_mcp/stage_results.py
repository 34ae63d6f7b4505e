"""What a stage sends back to the server: the run stage's judgement, the reference's baselines, a
build's outcome and the error any stage can end in, as pydantic models checked at both ends.

The worker (stitch_mcp.worker.main) validates its stage's result against `STAGE_RESULTS` before
it writes the event line, and the server validates the line again on receipt (worker.run_worker),
so check.py reads attributes, never `.get` chains. Unknown keys are forbidden: the worker and the
server run the same checkout, so a key one side writes and the other does not know is our bug. It
fails loudly, as an `internal` error that names the key, rather than as a field silently dropped.

What a candidate's room says about its build (diagnostics, extensions) is untrusted data: the
judge keeps only the valid records (`valid_records`) before they reach these models.

The report models of stitch_mcp.models are reused where they fit, made strict here (a subclass
with extra="forbid"); the fields the report does not show (the judge's clock, near-zero trials)
are added to them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from stitch_mcp.models import (
    BatchTiming,
    Diagnostic,
    ExtensionBuild,
    Finding,
    NoiseReport,
    TimingStats,
    TrialResult,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def valid_records(model: type[BaseModel], records: Any) -> list:
    """The records that are valid `model`s, with the fields it has (an untrusted account, such
    as a room's of its build: a malformed record is left out, never an error of ours)."""
    out = []
    for record in records if isinstance(records, list) else []:
        try:
            out.append(model.model_validate({k: v for k, v in record.items() if k in model.model_fields}))
        except (AttributeError, ValueError):
            continue
    return out


# ------------------------------------------------------------------ the parts


class CompilerDiagnostic(Diagnostic, extra="forbid"):
    """One compiler message of the candidate's build, as the judge kept it."""


class BuiltExtension(ExtensionBuild, extra="forbid"):
    """One extension the candidate's room built, as the judge kept it."""


class StageFailure(_Strict):
    """How a stage failed: the candidate's own failure (its room's account, bounded), a broken
    room, the reference, or our own exception."""

    kind: str
    message: str = ""
    why: str = ""  # what a crash's text means (stitch_mcp.crashes)
    traceback: str = ""
    line: int | None = None  # the candidate's line it failed at
    log: str = ""  # the build's log
    diagnostics: list[CompilerDiagnostic] = []
    extensions: list[BuiltExtension] = []


class ReferenceNoise(NoiseReport, extra="forbid"):
    pass


class JudgedTrial(TrialResult, extra="forbid"):
    near_zero: bool = False  # the reference is within atol of zero and the output does not follow it
    noise: ReferenceNoise | None = None


class JudgedFinding(Finding, extra="forbid"):
    pass


class MeasuredTimes(TimingStats, extra="forbid"):
    host_median_ms: float | None = None  # the host's clock around call and synchronize (timing.bench)


class Baselines(_Strict):
    """The reference timed alone: eager and, when asked, torch.compile (correctness.measure_baselines)."""

    eager: MeasuredTimes
    compiled: MeasuredTimes | None = None
    compile_note: str = ""


class TimingBracket(_Strict):
    """The judge's clock around the candidate's calls (judge.timing.judge_times)."""

    candidate_ms: float
    door_overhead_ms: float
    noise_ms: float
    after_ms: float
    reference_after_ms: float


class BatchTimes(BatchTiming, extra="forbid"):
    pass


class RunTiming(_Strict):
    """The run stage's timing (stitch_mcp.judge.timing)."""

    method: str
    candidate: MeasuredTimes
    eager: MeasuredTimes
    eager_note: str = ""  # eager timed alone was lower than beside the candidate
    eager_alone: MeasuredTimes | None = None  # the reference's room timed with no candidate alive: check.py caches it
    candidate_alone: MeasuredTimes | None = None  # on the CPU clock, the candidate's room timed alone before it ended
    eager_block_spread: float
    candidate_block_spread: float
    bracket: TimingBracket
    batch: BatchTimes | None = None
    harness_ms: float | None = None  # on the CPU clock: judge.timing.skippable_harness_ms
    harness_withheld: bool = False  # it lowered the speedup (judge.timing.settle_cpu_clock, _cpu_batch_bound)
    harness_note: str = ""
    interrupts_per_ms: list[float] | None = None  # on the CPU clock: [reference's windows, candidate's]
    no_speedup: str = ""  # on the CPU clock, the finding that took the candidate's speedup (judge.timing.settle_cpu_clock)
    floor_bytes: int | None = None
    floor_ms: float | None = None
    floor_bound: Literal["memory", "compute"] | None = None
    floor_note: str = ""
    compiled: MeasuredTimes | None = None
    compile_note: str = ""
    clean_baselines: Baselines | None = None  # measured here with no candidate alive: check.py caches them
    baselines_cached: bool = False


class MemoryHeld(_Strict):
    """The shares of the card's memory the judge held (gpu_memory.held); all defaults: none."""

    need_bytes: int | None = None
    shares: int = 0
    of_shares: int = 0
    waited_s: float = 0.0


class LeaseHeld(_Strict):
    """The device lease the judge held for trials and timing (judge._device_lease)."""

    label: str = ""
    waited_s: float = 0.0
    note: str = ""
    window: list[float] | None = None  # [start, end] epoch seconds


class RoomReport(_Strict):
    """How the room ran, for the report: the isolation it had and how it ended."""

    isolation: str = ""
    mechanisms: list[str] = []
    warnings: list[str] = []
    returncode: int | None = None
    output: str = ""


# ------------------------------------------------------------------ the stages' results


class StageResult(_Strict):
    """What every stage may end in: an error instead of (part of) its result."""

    error: StageFailure | None = None


class RunStageResult(StageResult):
    """The judge's run stage (stitch_mcp.judge.run_stage); a failed stage keeps what it had."""

    trials: list[JudgedTrial] = []
    findings: list[JudgedFinding] = []
    checks_run: list[str] = []
    stage_seconds: dict[str, float] = {}
    notes: list[str] = []
    device: str = ""
    device_kind: str = ""  # "cuda" or "cpu"
    memory: MemoryHeld | None = None
    atol: float | None = None
    rtol: float | None = None
    output_dtype: str = ""
    extensions: list[BuiltExtension] = []
    copied_state: int = 0  # the reference's weights copied into ModelNew
    lease: LeaseHeld | None = None
    timing: RunTiming | None = None
    room: RoomReport | None = None


class BaselineTiming(Baselines):
    baselines_cached: bool = False


class BaselineStageResult(StageResult):
    """The baseline stage (stitch_mcp.correctness.baseline_stage)."""

    device: str = ""
    timing: BaselineTiming | None = None


class BuildStageResult(StageResult):
    """A build in a candidate room (stitch_mcp.build_room): made in the server process, read by
    check.py like the stages' results."""

    extensions: list[BuiltExtension] = []
    diagnostics: list[CompilerDiagnostic] = []
    log_tail: str = ""
    needs_gpu: str | None = None  # compiled as far as a host without a GPU allows: why it needs one


# The worker's stages and their results' models. "selftest" has none: it exists for the tests of
# the worker itself and sends whatever they ask for, as a plain dict.
STAGE_RESULTS: dict[str, type[StageResult]] = {"run": RunStageResult, "baseline": BaselineStageResult}


def read_stage_result(stage: str, data: Any) -> StageResult | Any:
    """`data` as `stage`'s model (unchanged for a stage without one); a result that does not
    validate becomes an `internal` error naming what did not match."""
    model = STAGE_RESULTS.get(stage)
    if model is None:
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return model(error=StageFailure(kind="internal", message=f"the {stage} stage's result does not match "
                                                                 f"its model (stitch_mcp.stage_results): {exc}"[:4000]))
