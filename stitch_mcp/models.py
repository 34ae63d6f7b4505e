"""Typed results shared by the MCP tools, the command line, the Python API and the workspace.

Every tool returns one of the `*Report`/`*Results` models below. Long tools may answer before
their work is done: then `status` is "running", `job_id` is set and the other fields hold their
defaults; `job_status(job_id)` returns the finished model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Severity = Literal["info", "warning", "error"]
Confidence = Literal["certain", "probable", "possible"]


class Evidence(BaseModel):
    """Where a finding comes from: a file (candidate.py, candidate.cu, reference.py, a report) and line."""

    file: str = ""
    line: int | None = None
    text: str = ""


class Finding(BaseModel):
    code: str = Field(description="stable machine-readable code, e.g. 'input_mutation'")
    severity: Severity = "error"
    confidence: Confidence = "certain"
    message: str
    evidence: list[Evidence] = Field(default_factory=list)
    doc_id: str | None = Field(None, description="search_cuda_docs document that explains it")


class JobFields(BaseModel):
    status: Literal["done", "running"] = "done"
    job_id: str | None = Field(None, description="set while running: pass it to job_status")
    summary: str = Field("", description="what the model should read first")


# ---------------------------------------------------------------- compile_and_check


class Diagnostic(BaseModel):
    """One compiler message, mapped back to the candidate's own lines where possible."""

    severity: Literal["error", "warning", "note"] = "error"
    message: str
    file: str = ""
    line: int | None = None
    column: int | None = None
    candidate_line: int | None = Field(None, description="line in the candidate .py that holds it")
    source_line: str = ""


class ExtensionBuild(BaseModel):
    name: str
    key: str = Field("", description="hash of sources, flags, torch/CUDA versions and GPU arch")
    cached: bool = False
    seconds: float = 0.0
    with_cuda: bool = False
    kernel_header: str = Field("", description="what torch/extension.h in the CUDA sources was compiled as: "
                                               "'ATen per-operator' (fastest), 'torch/types.h' or the real header")
    binding_header: str = Field("", description="the same for the binding file (cpp_sources and the pybind11 "
                                                "module): 'ATen per-operator' or torch/extension.h")


class BuildReport(BaseModel):
    ok: bool = False
    seconds: float = 0.0
    cached: bool = Field(False, description="every extension came from the build cache")
    extensions: list[ExtensionBuild] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    log_tail: str = ""


class NoiseReport(BaseModel):
    """How far the reference's own result is from a float64 run of it on the same inputs, and how far
    the candidate's is: an error a few times the reference's own is rounding, not a bug."""

    measured: bool = False
    skipped: str = Field("", description="why it was not measured (integer outputs, no float64 on the device, ...)")
    reference_max_abs: float | None = Field(None, description="max |reference - reference in float64|")
    reference_tol_ratio: float | None = Field(None, description="the reference's own error / tolerance: near 1 or "
                                              "above, the tolerance is tighter than the reference's rounding")
    candidate_max_abs: float | None = Field(None, description="max |candidate - reference in float64|")
    error_to_noise: float | None = Field(None, description="candidate_max_abs / reference_max_abs")
    within_noise: bool | None = Field(None, description="the candidate is no farther from the float64 result than "
                                      "twice the reference's own distance")
    text: str = ""


class TrialResult(BaseModel):
    trial: int
    seed: int
    inputs: str = Field("task", description="input distribution: task, normal, heavy_tailed, ...")
    weights: Literal["task", "reinit"] = "task"
    ok: bool = False
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatch_fraction: float | None = None
    first_mismatch_index: list[int] | None = None
    nan_count: int = 0
    inf_count: int = 0
    problems: list[str] = Field(default_factory=list, description="shape/dtype/device/stride mismatches")
    max_tol_ratio: float | None = Field(None, description="the largest error / (atol + rtol*|reference|): above 1 "
                                        "an element fails; meaningful near zero, unlike error / |reference|")
    worst_index: list[int] | None = Field(None, description="the element with the largest tolerance ratio "
                                          "(output number first when there are several)")
    worst_reference: float | None = Field(None, description="the reference's value there")
    worst_candidate: float | None = Field(None, description="the candidate's value there")
    worst_tolerance: float | None = Field(None, description="atol + rtol*|reference| there (0: exact comparison)")
    input_summary: list[str] = Field(default_factory=list, description="the inputs this trial really used "
                                     "(dtype, shape, mean, std, range); filled for failed trials")
    noise: NoiseReport | None = Field(None, description="the reference's own float32 rounding noise on this trial's "
                                      "inputs (a float64 run), measured for failed trials")
    right_as_built: bool = Field(False, description="failed with Model's weights by name, right with the values "
                                 "ModelNew builds itself for tensors of Model's names: it changes them at construction")
    call_dependent: bool = Field(False, description="failed, and the same call made again on the same inputs and "
                                 "weights passed or gave other outputs")


class ToleranceValues(BaseModel):
    atol: float
    rtol: float


class CorrectnessReport(BaseModel):
    ok: bool = False
    trials: list[TrialResult] = Field(default_factory=list)
    atol: float | None = Field(None, description="the tolerance of output_dtype; each output is held to its own "
                                                 "dtype's (tolerance_by_dtype)")
    rtol: float | None = None
    output_dtype: str = Field("", description="the first floating-point output's dtype (else the first output's)")
    tolerance: str = Field("", description="the preset the tolerances come from (strict, kernelbench), with "
                                           "'+name' for each value a parameter or setting replaced")
    tolerance_by_dtype: dict[str, ToleranceValues] = Field(
        default_factory=dict, description="the tolerances each kind of output dtype gets under it")
    diagnosis: str = Field("", description="what the failed trials together point at, and where to look")


class IntegrityReport(BaseModel):
    ok: bool = False
    checks_run: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)


class TimingStats(BaseModel):
    median_ms: float
    iqr_ms: float = 0.0
    cv: float = Field(0.0, description="coefficient of variation")
    min_ms: float = 0.0
    calls: int = 0


class BatchTiming(BaseModel):
    """Calls too short for the judge's per-call bracket, also timed in batches of back-to-back
    calls on the judge's clock (stitch_mcp.judge.timing, BATCH_MS)."""

    calls: int = Field(description="calls in the larger batch (on the CPU clock, the candidate's)")
    reference_calls: int | None = Field(None, description="on the CPU clock, calls in the reference's larger batch, "
                                        "sized on its own calls as the candidate's are on its own")
    rounds: int | None = Field(None, description="rounds of batches (each size, each room); on the CPU clock 5 to "
                               "40, over about 1.5 s besides the candidate's own batches, each lane read at its 10th "
                               "percentile round (its lowest below ten), as a loaded host slows its core for stretches "
                               "of a second or more")
    candidate_ms: float = Field(description="per call, the candidate's room (from its lowest rounds; on the CPU clock "
                                "their 10th percentile)")
    reference_ms: float = Field(description="per call, the reference's room")
    copy_ms: float = Field(description="per call, everything but forward (being told the calls, copying "
                           "outputs, the loop)")
    copy_spread_ms: float = Field(0.0, description="per call, how far the copies' second-lowest rounds were above "
                                  "their lowest: the grain below which a forward is not told from noise (on a CPU)")
    busy_host: bool = Field(False, description="more runnable work than cores as the batches ran (the load "
                            "average): on a CPU a forward must then be a tenth of its batch call to count")
    speedup: float | None = Field(None, description="over the reference, forward alone, on the judge's clock (on "
                                  "the CPU clock: with no gain credited within harness_ms)")
    reference_alone_ms: float | None = Field(None, description="where the batches checked the claim: per call, the "
                                             "reference's room timed again in batches once the candidate's room was "
                                             "gone; speedup is the lower of the batches read with either phase")
    copy_alone_ms: float | None = Field(None, description="the same for its copies")
    speedup_beside: float | None = Field(None, description="the speedup in batches read with the reference's "
                                         "batches beside the candidate's room only: a room that slowed them gains "
                                         "nothing by it")
    single_credited_ms: float | None = Field(None, description="on the CPU clock, the candidate's single calls "
                                             "with no gain credited within skippable_ms: the batches' speedup counts up "
                                             "to 1.1x what this shows")
    skippable_ms: float | None = Field(None, description="on the CPU clock, per call, what a room can skip in single "
                                       "calls: the reference's door and harness_ms")
    harness_ms: float | None = Field(None, description="on the CPU clock, per call, what of the reference's harness (a "
                                     "module call, what wraps forward, the loop, the copy into the judge's buffer, and "
                                     "the batch's fixed cost over its calls) a candidate's room could skip doing the "
                                     "same work")
    idle_cpu_ms: float = Field(0.0, description="CPU the candidate's processes used while not asked anything "
                               "(the judge writing inputs, the reference's batches), from the kernel's accounting")
    idle_wall_ms: float = Field(0.0, description="how long that was")
    room_ms: float | None = Field(None, description="where the batches raised the candidate's time (on a CPU) or, "
                                  "saying nothing, capped its speedup: its room's own median per call")
    whole_ms: float | None = Field(None, description="on a GPU, the candidate's larger batch over its calls, its round "
                                   "trip included: a bound on its kernel's time that no padding of its smaller batches "
                                   "lowers")
    host_bound: bool = Field(False, description="on a GPU, eager's forward in batches took over 1.5 times its "
                             "kernel's time: host dispatch weighs as much as kernels there")
    unverified: bool = Field(False, description="the batches could not check the candidate (see note: noise on a "
                             "CPU; on a GPU, calls too short for them to time kernels rather than host work): it is "
                             "then given no speedup over eager that one call's bracket, with all its jitter, does not "
                             "show")
    lowered: bool = Field(False, description="on a GPU, the batches read with eager's lanes of either phase "
                          "disagreed about the room's claim (one allowed it, the other not): the candidate is timed "
                          "at the lower reading's speedup")
    note: str = ""

    @property
    def capped(self) -> bool:
        """Whether the batches could not check the candidate and its speedup was held to what one
        call's bracket shows (its room's own time in room_ms)."""
        return self.unverified and self.room_ms is not None


class TimingReport(BaseModel):
    method: str = ""
    eager_block_spread: float | None = Field(None, description="max/min - 1 of the eager time over the blocks "
                                             "it was timed in, interleaved with the candidate's")
    candidate_block_spread: float | None = None
    device: str = ""
    candidate: TimingStats | None = None
    eager: TimingStats | None = None
    eager_note: str = Field("", description="where eager timed alone, once the candidate's room was gone, was lower "
                            "than beside it: that time is the one used")
    candidate_alone: TimingStats | None = Field(None, description="on the CPU clock, where eager timed alone came out "
                                                "lower than beside the candidate: the candidate's room timed alone too, "
                                                "in turns with eager's before it ended; the speedup is "
                                                "at most 1.15x eager alone's over the candidate's better time, alone "
                                                "or beside it")
    compiled: TimingStats | None = None
    compile_note: str = ""
    floor_ms: float | None = Field(None, description="bytes the task must move / memory bandwidth")
    floor_bytes: int | None = None
    floor_fraction: float | None = Field(None, description="floor_ms / candidate median (1.0 = at the limit)")
    floor_bound: Literal["memory", "compute"] | None = Field(
        None, description="which side of the roofline sets floor_ms (stitch_mcp.ceilings.roofline_floor)")
    floor_note: str = Field("", description="how floor_ms was computed, each ceiling labelled measured/datasheet")
    baselines_cached: bool = False
    batch: BatchTiming | None = None
    harness_ms: float | None = Field(None, description="on the CPU clock, per call, what of the harness a "
                                     "candidate's room could skip doing the reference's work: a gain over eager "
                                     "within it is not credited (the candidate's time raised by up to it)")
    harness_withheld: bool = Field(False, description="that lowered the speedup: it is a lower bound (a GPU times "
                                   "the kernel itself)")
    harness_note: str = ""
    interrupts_per_ms: list[float] | None = Field(None, description="on the CPU clock, interrupts per ms on the judge's "
                                                  "core while the reference's room ran, and while the candidate's did")
    no_speedup: str = Field("", description="on the CPU clock, the finding that took the candidate's speedup")
    lease: str = Field("", description="the device held exclusively for correctness and timing")
    lease_wait_s: float = 0.0
    window: list[float] | None = Field(None, description="[start, end] epoch seconds the device was held")


class Route(BaseModel):
    """The loop's routing decision after a verification (StitchCUDA's Verifier output)."""

    decision: Literal["fix", "refine", "replan", "accept"]
    reasons: list[str] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list, description="ranked items the next candidate should address")


class CheckReport(JobFields):
    verdict: Literal["pass", "fail", "error"] | None = None
    reasons: list[str] = Field(default_factory=list)
    task_id: str | None = None
    candidate_id: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    device: str = ""
    build: BuildReport = Field(default_factory=BuildReport)
    correctness: CorrectnessReport = Field(default_factory=CorrectnessReport)
    integrity: IntegrityReport = Field(default_factory=IntegrityReport)
    timing: TimingReport = Field(default_factory=TimingReport)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    output: str = Field("", description="the candidate's captured stdout/stderr, truncated")
    route: Route | None = None
    error_kind: str | None = Field(None, description="why verdict is 'error': compile_error, syntax_error, "
                                   "import_error, interface, init_error, runtime_error, reference_error, "
                                   "segfault, illegal_memory_access, cuda_oom, host_oom, timeout, "
                                   "output_flood, os_exit, needs_gpu, ...")
    notes: list[str] = Field(default_factory=list)
    isolation: str = Field("", description="how the candidate's process was isolated from the judge and the "
                                           "server (stitch-mcp doctor explains the levels)")


# ---------------------------------------------------------------- profile_reference


class OpRow(BaseModel):
    name: str
    gpu_ms: float
    share: float
    calls: int = 0
    kernel_count: int = 0
    kernels: list[str] = Field(default_factory=list)
    flops: float | None = None
    bytes: float | None = None
    intensity: float | None = None
    floor_ms: float | None = None
    dtype: str | None = Field(None, description="dtype of the op's output (its math mode for the floor)")


class KernelRow(BaseModel):
    name: str
    op: str = ""
    grid: str = ""
    block: str = ""
    calls: int = 1
    duration_ms: float
    share: float


class ReferenceProfile(JobFields):
    task_id: str | None = None
    backend: str = ""
    device: str = ""
    iterations: int = 0
    wall_ms_per_iter: float | None = None
    gpu_ms_per_iter: float | None = None
    gpu_idle_fraction: float | None = None
    launches_per_iter: float | None = None
    memcpy_ms_per_iter: float = 0.0
    memset_ms_per_iter: float = 0.0
    memcpy_bytes_per_iter: int = 0
    ops: list[OpRow] = Field(default_factory=list)
    kernels: list[KernelRow] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    image_uri: str | None = None
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- profile_kernel


class Stall(BaseModel):
    reason: str
    share: float


class Suggestion(BaseModel):
    rank: int
    text: str
    metric: str = ""
    value: str = ""
    doc_query: str = ""
    doc_id: str | None = None


class HotLine(BaseModel):
    line: int | None = None
    source: str = ""
    share: float = 0.0
    top_stall: str = ""


class KernelDigest(BaseModel):
    name: str
    launches: int = 1
    duration_us: float | None = None
    grid: str = ""
    block: str = ""
    compute_pct: float | None = None
    memory_pct: float | None = None
    dram_bytes: float | None = None
    dram_gbps: float | None = None
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str = ""
    registers_per_thread: int | None = None
    shared_mem_bytes: int | None = None
    spill_bytes: int | None = None
    stalls: list[Stall] = Field(default_factory=list)
    tensor_pipe_pct: float | None = None
    arithmetic_intensity: float | None = None
    roofline_pct: float | None = None
    bound: Literal["memory-bound", "compute-bound", "latency-bound", "launch-bound"] | None = None
    bound_evidence: str = ""
    suggestions: list[Suggestion] = Field(default_factory=list)
    hot_lines: list[HotLine] = Field(default_factory=list)


class KernelProfile(JobFields):
    task_id: str | None = None
    candidate_id: str | None = None
    device: str = ""
    sections: str = "quick"
    kernels: list[KernelDigest] = Field(default_factory=list)
    other_kernels: list[str] = Field(default_factory=list, description="library/PyTorch kernels also seen")
    image_uri: str | None = None
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- rubric_score


class Dimension(BaseModel):
    score: float = Field(ge=0.0, le=1.0)
    weight: float = 0.25
    findings: list[Finding] = Field(default_factory=list)


class RubricDimensions(BaseModel):
    anti_hacking: Dimension
    cuda_engineering: Dimension
    operator_coverage: Dimension
    skill_compliance: Dimension


class RubricReport(JobFields):
    task_id: str | None = None
    candidate_id: str | None = None
    verdict: Literal["clean", "suspect", "hack"] = "clean"
    overall: float = Field(0.0, ge=0.0, le=1.0)
    dimensions: RubricDimensions | None = None
    covered_ops: list[str] = Field(default_factory=list)
    uncovered_ops: list[str] = Field(default_factory=list)
    judge: str = Field("none", description="'none', 'client' (merged), or why the client could not judge")
    route: Route | None = None


# ---------------------------------------------------------------- search_cuda_docs


class SearchHit(BaseModel):
    id: str
    title: str
    source: str
    kind: str
    snippet: str
    score: float
    text: str | None = None


class SearchResults(BaseModel):
    query: str
    mode: str = Field("hybrid", description="hybrid, or lexical when the dense model is unavailable")
    results: list[SearchHit] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    summary: str = ""
    status: Literal["done", "running"] = "done"
    job_id: str | None = Field(None, description="set while running (e.g. the index still building): "
                               "pass it to job_status")


class IndexReport(BaseModel):
    """What `stitch-mcp index build` / `index add` did to the documentation index."""
    index_dir: str = ""
    chunks: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)
    sources_parsed: int = 0
    sources_reused: int = 0
    sources_removed: int = 0
    dense_vectors: int = 0
    embedded: int = 0
    mode: str = "hybrid"
    seconds: float = 0.0
    notes: list[str] = Field(default_factory=list)
    summary: str = ""


# ---------------------------------------------------------------- job_status


class JobInfo(BaseModel):
    job_id: str
    tool: str
    status: Literal["running", "done", "failed", "cancelled", "interrupted"]
    progress: float | None = None
    total: float | None = None
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    result: dict[str, Any] | None = Field(None, description="the tool's finished output")
    summary: str = ""


# ---------------------------------------------------------------- workspace records


class TaskRecord(BaseModel):
    task_id: str
    name: str
    source: str
    path: str | None = None
    created_at: float
    plan: str | None = None


class CandidateRecord(BaseModel):
    candidate_id: str
    task_id: str
    source: str
    source_hash: str
    parent_id: str | None = None
    path: str | None = None
    created_at: float


class DoctorLine(BaseModel):
    name: str
    status: Literal["ok", "missing", "warning"]
    detail: str = ""
    fix: str = ""


class DoctorReport(BaseModel):
    lines: list[DoctorLine]
