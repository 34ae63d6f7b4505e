"""The MCP surface: tools, prompts and resources. Each tool calls one plain function of a stage
module; nothing here builds, runs or measures anything itself.

tool                -> code
compile_and_check   -> stitch_mcp.check.compile_and_check
profile_reference   -> stitch_mcp.profiling.reference.profile_reference
profile_kernel      -> stitch_mcp.profiling.kernel.profile_kernel
rubric_score        -> stitch_mcp.score.rubric_score
search_cuda_docs    -> stitch_mcp.search.search_cuda_docs
job_status          -> stitch_mcp.jobs (below: _finish)
save_plan, save_feedback -> stitch_mcp.loop.save_plan / save_feedback
"""

from __future__ import annotations

import base64
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Resolve
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from stitch_mcp import __version__
from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Job, JobManager, job_key
from stitch_mcp.models import (
    CheckReport,
    JobInfo,
    KernelProfile,
    ReferenceProfile,
    RubricReport,
    SearchResults,
)
from stitch_mcp.store import get_workspace

log = logging.getLogger("stitch_mcp")
INVALID_PARAMS = -32602

INSTRUCTIONS = """\
stitch-mcp is the Verifier of a Plan -> Code -> Verify loop for CUDA kernels. You are the Coder.
1. profile_reference(reference) registers a KernelBench program (Model, get_inputs, get_init_inputs)
   and shows where its GPU time goes; read the `planner` prompt and write a plan.
2. Write a candidate defining ModelNew (same constructor and forward) with custom CUDA
   (torch.utils.cpp_extension.load_inline), then compile_and_check(candidate, task_id).
3. profile_kernel explains why a kernel is slow; rubric_score grades the work and catches hacks;
   search_cuda_docs finds the API or technique to use. The `verifier` prompt routes the next step.
Long calls answer status "running" with a job_id: call job_status(job_id) until it is done.
"""

# Flat parameter types shared by the tools (what the calling model reads in the schema).
Reference = Annotated[str | None, Field(
    description="KernelBench reference program: a path to a .py file or its source text "
                "(text with a newline is source). Optional when task_id is given.")]
TaskId = Annotated[str | None, Field(description="task id returned by an earlier call, instead of reference")]
Candidate = Annotated[str | None, Field(
    description="candidate program defining ModelNew: a path to a .py file or its source text")]
CandidateId = Annotated[str | None, Field(description="candidate id returned by compile_and_check")]
MaxWait = Annotated[float, Field(
    ge=0, le=3600, description="seconds to wait before answering status='running' with a job_id")]


def _tool_result(model: BaseModel, summary: str, images: list[str] | None = None) -> CallToolResult:
    content: list[Any] = [TextContent(type="text", text=summary or model.model_dump_json(indent=1))]
    for uri in images or []:
        path = _artifact_path(uri)
        if path and path.exists():
            content.append(ImageContent(type="image", data=base64.b64encode(path.read_bytes()).decode(),
                                        mime_type="image/png"))
    return CallToolResult(content=content, structured_content=model.model_dump(mode="json"))


def _content_args(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments with each program replaced by its content hash, validated on the way.

    Reading the programs here answers a bad path or source at once, naming the field, and keys
    the job on what the files hold: an edited file is new work, not a retry of the old call.
    """
    from stitch_mcp.sources import check_reference, load_program
    from stitch_mcp.store import content_id

    keyed = dict(args)
    for field in ("reference", "candidate"):
        if keyed.get(field):
            try:
                program = load_program(keyed[field], field)
                if field == "reference":
                    check_reference(program)
            except UserError as exc:
                raise ToolError(str(exc)) from None
            keyed[field] = content_id("s", program.source)
    return keyed


def _artifact_path(uri: str) -> Path | None:
    prefix = "stitch://artifacts/"
    if not uri.startswith(prefix):
        return None
    name = uri[len(prefix):]
    if "/" in name or name.startswith("."):
        return None
    return get_settings().artifacts_dir / name


class JobRunner:
    """Runs each long tool's work as a job: waits up to max_wait_s forwarding progress, else answers
    'running' with the job id; records jobs in the workspace so a restart can report them."""

    def __init__(self) -> None:
        ws = get_workspace()
        interrupted = ws.mark_interrupted()
        if interrupted:
            log.warning("%d job(s) were interrupted by the last shutdown", interrupted)
        self.jobs = JobManager(on_start=lambda j: ws.job_started(j.job_id, j.tool),
                               on_finish=self._record_finish)

    @staticmethod
    def _record_finish(job: Job) -> None:
        result = job.result.model_dump_json() if job.result is not None else None
        get_workspace().job_finished(job.job_id, job.status, job.error, result)

    async def run_job(self, ctx: Context | None, tool: str, output: type[BaseModel], args: dict[str, Any],
                      fn: Callable[..., BaseModel], max_wait_s: float) -> CallToolResult:
        job = self.jobs.submit(tool, job_key(tool, **_content_args(args)), functools.partial(fn, **args))
        try:
            done = await self._wait(ctx, job, max_wait_s)
        except anyio.get_cancelled_exc_class():
            self.jobs.cancel(job.job_id)
            raise
        if not done:
            p = job.progress
            running = output(status="running", job_id=job.job_id,
                             summary=f"{tool} is still running ({p.message or 'working'}); "
                                     f"call job_status(job_id='{job.job_id}') to wait for the result.")
            return _tool_result(running, running.summary)
        return self._finish(job)

    async def _wait(self, ctx: Context | None, job: Job, max_wait_s: float) -> bool:
        seen = -1
        with anyio.move_on_after(max_wait_s):
            while not job.finished.is_set():
                p = job.progress
                if ctx is not None and p.version != seen:
                    seen = p.version
                    try:
                        await ctx.report_progress(p.done, p.total, p.message or None)
                    except Exception:  # a client without a progress token: nothing to report to
                        pass
                await anyio.to_thread.run_sync(job.finished.wait, 0.25, abandon_on_cancel=True)
        return job.finished.is_set()

    @staticmethod
    def _finish(job: Job) -> CallToolResult:
        if job.status == "done" and job.result is not None:
            r = job.result
            return _tool_result(r, getattr(r, "summary", ""), [u for u in [getattr(r, "image_uri", None)] if u])
        if job.status == "cancelled":
            raise ToolError(f"{job.tool} was cancelled")
        raise ToolError(job.error or f"{job.tool} failed")


class _StitchMCPServer(MCPServer):
    async def get_prompt(self, name, arguments=None, context=None):
        # The SDK reports an unknown prompt as an internal error; say what is wrong instead.
        if self._prompt_manager.get_prompt(name) is None:
            known = ", ".join(p.name for p in await self.list_prompts())
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; prompts: {known}")
        return await super().get_prompt(name, arguments, context)


def _prompt_error(exc: UserError) -> MCPError:
    return MCPError(INVALID_PARAMS, str(exc))


def _judge_request(ctx: Context, judge: str = "none", candidate: str | None = None, candidate_id: str | None = None,
                   reference: str | None = None, task_id: str | None = None, feedback: list[str] | None = None):
    """Resolver of rubric_score's second opinion: a sampling request when judge='client' (score.judge_request)."""
    from stitch_mcp.score import judge_request

    return judge_request(ctx, judge, candidate, candidate_id, reference, task_id, feedback)


def create_server() -> MCPServer:
    from stitch_mcp import prompts as prompt_text
    from stitch_mcp import workspace_views

    state = JobRunner()
    mcp = _StitchMCPServer("stitch-mcp", instructions=INSTRUCTIONS, version=__version__)
    long_running = ToolAnnotations(read_only_hint=False, open_world_hint=False)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @mcp.tool(annotations=long_running)
    async def profile_reference(
        ctx: Context,
        reference: Reference = None,
        task_id: TaskId = None,
        backend: Annotated[Literal["auto", "nsys", "torch"], Field(
            description="auto: Nsight Systems when it can write a report, else torch.profiler")] = "auto",
        iterations: Annotated[int, Field(ge=1, le=100, description="profiled iterations after warm-up")] = 5,
        max_wait_s: MaxWait = 45,
    ) -> Annotated[CallToolResult, ReferenceProfile]:
        """Register a KernelBench reference program as a task and show where its GPU time goes: ops and
        kernels ranked by time, launch overhead, fusion candidates, each op's floor on this GPU, and a
        timeline image. Returns task_id for the other tools."""
        from stitch_mcp.profiling.reference import profile_reference as run

        args = dict(reference=reference, task_id=task_id, backend=backend, iterations=iterations)
        return await state.run_job(ctx, "profile_reference", ReferenceProfile, args, run, max_wait_s)

    @mcp.tool(annotations=long_running)
    async def compile_and_check(
        ctx: Context,
        candidate: Candidate = None,
        reference: Reference = None,
        task_id: TaskId = None,
        trials: Annotated[int | None, Field(ge=1, le=100, description="correctness trials (default 5)")] = None,
        atol: Annotated[float | None, Field(gt=0, description="absolute tolerance (default by dtype)")] = None,
        rtol: Annotated[float | None, Field(gt=0, description="relative tolerance (default by dtype)")] = None,
        tolerance: Annotated[Literal["strict", "kernelbench"] | None, Field(
            description="tolerance preset: strict (float32 1e-4) or kernelbench (1e-2); default from settings; "
                        "atol/rtol replace its values")] = None,
        timing: Annotated[bool, Field(description="time the candidate against eager and torch.compile")] = True,
        compare_compile: Annotated[bool | None, Field(
            description="also time torch.compile (default from settings)")] = None,
        max_wait_s: MaxWait = 45,
    ) -> Annotated[CallToolResult, CheckReport]:
        """Build a candidate (ModelNew), prove it correct against the reference on fresh inputs, run
        integrity checks that catch known reward hacks, and time it against PyTorch eager and
        torch.compile. verdict is pass, fail or error; reasons and summary say what to fix first."""
        from stitch_mcp.check import compile_and_check as run

        if not candidate:
            raise ToolError("candidate: give the candidate program (path or source)")
        args = dict(candidate=candidate, reference=reference, task_id=task_id, trials=trials, atol=atol,
                    rtol=rtol, timing=timing, compare_compile=compare_compile, tolerance=tolerance)
        return await state.run_job(ctx, "compile_and_check", CheckReport, args, run, max_wait_s)

    @mcp.tool(annotations=long_running)
    async def profile_kernel(
        ctx: Context,
        candidate: Candidate = None,
        candidate_id: CandidateId = None,
        reference: Reference = None,
        task_id: TaskId = None,
        kernel_filter: Annotated[str | None, Field(
            description="only kernels whose name contains this (or regex:PATTERN)")] = None,
        launch_skip: Annotated[int, Field(ge=0, description="matching launches to skip first")] = 0,
        launch_count: Annotated[int, Field(ge=1, le=50, description="matching launches to profile")] = 5,
        sections: Annotated[Literal["quick", "full", "source"], Field(
            description="quick: throughput, memory, compute, occupancy, launch, stalls; full: all; "
                        "source: also the hottest source lines")] = "quick",
        max_wait_s: MaxWait = 45,
    ) -> Annotated[CallToolResult, KernelProfile]:
        """Profile a candidate's kernels with Nsight Compute: why each is slow (memory-, compute-, latency-
        or launch-bound, with the numbers that decide it), how far from this GPU's roofline, occupancy
        limiters, top stall reasons, and ranked suggestions that cite search_cuda_docs entries."""
        from stitch_mcp.profiling.kernel import profile_kernel as run

        args = dict(candidate=candidate, candidate_id=candidate_id, reference=reference, task_id=task_id,
                    kernel_filter=kernel_filter, launch_skip=launch_skip, launch_count=launch_count,
                    sections=sections)
        return await state.run_job(ctx, "profile_kernel", KernelProfile, args, run, max_wait_s)

    @mcp.tool(annotations=long_running)
    async def rubric_score(
        ctx: Context,
        candidate: Candidate = None,
        candidate_id: CandidateId = None,
        reference: Reference = None,
        task_id: TaskId = None,
        feedback: Annotated[list[str] | None, Field(
            description="the Verifier feedback this candidate was meant to address "
                        "(default: the stored feedback on the task's previous candidate)")] = None,
        judge: Annotated[Literal["none", "client"], Field(
            description="client: also ask the client's model (MCP sampling) for a second opinion")] = "none",
        max_wait_s: MaxWait = 45,
        opinion: Annotated[Any, Resolve(_judge_request)] = None,
    ) -> Annotated[CallToolResult, RubricReport]:
        """Score a candidate on StitchCUDA's rubric: anti-hacking (PyTorch fallbacks, cached or constant
        outputs, harness tricks), CUDA engineering, operator coverage and skill compliance. verdict is
        clean, suspect or hack; a hack scores 0 overall."""
        from stitch_mcp.score import rubric_score as run

        args = dict(candidate=candidate, candidate_id=candidate_id, reference=reference, task_id=task_id,
                    feedback=feedback, judge="none")
        result = await state.run_job(ctx, "rubric_score", RubricReport, args, run, max_wait_s)
        if judge == "client" and result.structured_content and result.structured_content.get("status") == "done":
            from stitch_mcp.score import client_judgement

            return await client_judgement(ctx, result, opinion)
        return result

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False))
    def save_plan(
        task_id: Annotated[str, Field(min_length=1, description="task id from profile_reference")],
        plan: Annotated[str, Field(min_length=1, max_length=100_000, description=
                                   "the plan, in the planner prompt's structure (Target ops, Fusion groups, ...)")],
    ) -> str:
        """Store the Planner's plan with a task; routing checks that its target ops are where the time goes."""
        from stitch_mcp.loop import save_plan as run

        try:
            return run(task_id, plan)
        except UserError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False))
    def save_feedback(
        candidate_id: Annotated[str, Field(min_length=1, description="the candidate the feedback is about")],
        items: Annotated[list[str], Field(min_length=1, max_length=20, description=
                                          "ranked feedback items, each '[tag] what - where - why - how to check'")],
    ) -> str:
        """Store the Verifier's feedback on a candidate; the next candidate's skill compliance is graded on it."""
        from stitch_mcp.loop import save_feedback as run

        try:
            return run(candidate_id, items)
        except UserError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(annotations=read_only)
    async def search_cuda_docs(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="API name or question")],
        k: Annotated[int, Field(ge=1, le=50, description="number of results")] = 5,
        kinds: Annotated[list[str] | None, Field(
            description="restrict to these kinds: card, header, bindings, user")] = None,
        include_text: Annotated[bool, Field(description="include each result's whole text")] = False,
        max_wait_s: MaxWait = 45,
    ) -> Annotated[CallToolResult, SearchResults]:
        """Search CUDA documentation offline: knowledge cards on optimisation techniques and profiler
        metrics, the installed toolkit's API reference, and your own documents. Exact API names match
        first. Each result has an id readable as stitch://docs/{id}."""
        from stitch_mcp.search import search_cuda_docs as run

        args = dict(query=query, k=k, kinds=kinds, include_text=include_text)
        return await state.run_job(ctx, "search_cuda_docs", SearchResults, args, run, max_wait_s)

    @mcp.tool(annotations=read_only)
    async def job_status(
        ctx: Context,
        job_id: Annotated[str, Field(min_length=1, description="job_id from a tool that answered 'running'")],
        max_wait_s: MaxWait = 45,
    ) -> Annotated[CallToolResult, JobInfo]:
        """Wait for a long call's job and return its finished result (or status 'running' again)."""
        try:
            job = state.jobs.get(job_id)
        except UserError as exc:
            stored = get_workspace().job(job_id)
            if stored is None:
                raise ToolError(str(exc)) from None
            info = JobInfo(job_id=job_id, tool=stored["tool"], status=stored["status"], error=stored["error"],
                           started_at=stored["started_at"], finished_at=stored["finished_at"],
                           summary=f"{stored['tool']} job {stored['status']}: {stored['error'] or 'finished'}")
            return _tool_result(info, info.summary)
        await state._wait(ctx, job, max_wait_s)  # a cancelled job_status leaves the job running
        p = job.progress
        info = JobInfo(job_id=job.job_id, tool=job.tool, status=job.status, progress=p.done, total=p.total,
                       message=p.message, started_at=job.started_at, finished_at=job.finished_at,
                       error=job.error,
                       result=job.result.model_dump(mode="json") if job.result is not None else None)
        if job.status == "running":
            info.summary = f"{job.tool} still running ({p.message or 'working'}); call job_status again."
        elif job.result is not None:
            info.summary = getattr(job.result, "summary", "") or f"{job.tool} done"
        else:
            info.summary = f"{job.tool} {job.status}: {job.error}"
        images = [u for u in [getattr(job.result, "image_uri", None)] if u]
        return _tool_result(info, info.summary, images)

    # ------------------------------------------------------------------ prompts

    @mcp.prompt()
    def planner(task_id: str) -> str:
        """Plan a CUDA implementation of a task from its reference and profile."""
        try:
            return prompt_text.render_planner(task_id)
        except UserError as exc:
            raise _prompt_error(exc) from None

    @mcp.prompt()
    def verifier(candidate_id: str) -> str:
        """Review a checked candidate and decide the next step: fix, refine, replan or accept."""
        try:
            return prompt_text.render_verifier(candidate_id)
        except UserError as exc:
            raise _prompt_error(exc) from None

    # ------------------------------------------------------------------ resources

    def _found(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except UserError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @mcp.resource("stitch://tasks", mime_type="application/json")
    def list_tasks() -> str:
        """Every task in the workspace."""
        import json

        return json.dumps([{"task_id": t.task_id, "name": t.name, "created_at": t.created_at}
                           for t in get_workspace().tasks()], indent=1)

    @mcp.resource("stitch://tasks/{task_id}", mime_type="application/json")
    def task_resource(task_id: str) -> str:
        """A task: its reference source, plan and latest reference profile."""
        return _found(lambda: workspace_views.task_json(task_id))

    @mcp.resource("stitch://tasks/{task_id}/history", mime_type="application/json")
    def task_history(task_id: str) -> str:
        """A task's candidates in order, with each one's verdicts and routing decisions."""
        return _found(lambda: workspace_views.history_json(task_id))

    @mcp.resource("stitch://tasks/{task_id}/best", mime_type="application/json")
    def task_best(task_id: str) -> str:
        """The task's fastest accepted candidate."""
        return _found(lambda: workspace_views.best_json(task_id))

    @mcp.resource("stitch://candidates/{candidate_id}", mime_type="application/json")
    def candidate_resource(candidate_id: str) -> str:
        """A candidate: its source and every report on it."""
        return _found(lambda: workspace_views.candidate_json(candidate_id))

    @mcp.resource("stitch://artifacts/{name}", mime_type="image/png")
    def artifact(name: str) -> bytes:
        """An image written by a profiler (timeline, roofline)."""
        path = _artifact_path(f"stitch://artifacts/{name}")
        if path is None or not path.is_file():
            raise ResourceNotFoundError(f"no artifact named {name!r}")
        return path.read_bytes()

    @mcp.resource("stitch://docs/{doc_id}", mime_type="text/markdown")
    def doc(doc_id: str) -> str:
        """A whole documentation chunk found by search_cuda_docs."""
        from stitch_mcp.search import get_doc

        return _found(lambda: get_doc(doc_id))

    return mcp
