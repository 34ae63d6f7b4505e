"""The MCP surface: tools, prompts, resources, completions and log messages. Each tool calls one
plain function of a stage module; nothing here builds, runs or measures anything itself.

tool                -> code
compile_and_check   -> stitch_mcp.check.compile_and_check
profile_reference   -> stitch_mcp.profiling.reference.profile_reference
profile_kernel      -> stitch_mcp.profiling.kernel.profile_kernel
rubric_score        -> stitch_mcp.rubric.rubric_score (second opinion: stitch_mcp.mcp_judge)
search_cuda_docs    -> stitch_mcp.search.search_cuda_docs
job_status          -> stitch_mcp.jobs.JobRunner
save_plan, save_feedback -> stitch_mcp.loop.save_plan / save_feedback
"""

from __future__ import annotations

import base64
import functools
import uuid
import inspect
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Resolve
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    Completion,
    EmptyResult,
    ImageContent,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError

from stitch_mcp import __version__
from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Job, JobRunner, Progress
from stitch_mcp.mcp_judge import judge_request, sampled_text
from stitch_mcp.mcp_session import session_of
from stitch_mcp.mcp_log import client_log
from stitch_mcp.mcp_roots import ClientRoots, use_client_roots
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
ParentId = Annotated[str | None, Field(
    description="the candidate this one was written from (default: the one this client submitted last on the "
                "task); skill compliance grades the feedback saved on it")]
MaxWait = Annotated[float, Field(
    ge=0, le=3600, description="seconds to wait for the result before answering status='running' with a "
                               "job_id (a client that exits after one call should wait for the whole result)")]


# Truthful hints: the long tools add records (tasks, candidates, reports) and never change or delete
# existing ones; a repeated call measures again and stores another report, so none is idempotent.
RECORDING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                            open_world_hint=False)
READING = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _tool_result(model: BaseModel, summary: str, images: list[str] | None = None) -> CallToolResult:
    content: list[Any] = [TextContent(type="text", text=summary or model.model_dump_json(indent=1))]
    for uri in images or []:
        path = _artifact_path(uri)
        if path and path.is_file():
            content.append(ImageContent(type="image", data=base64.b64encode(path.read_bytes()).decode(),
                                        mime_type="image/png"))
    return CallToolResult(content=content, structured_content=model.model_dump(mode="json"))


def _artifact_path(uri: str) -> Path | None:
    prefix = "stitch://artifacts/"
    if not uri.startswith(prefix):
        return None
    name = uri[len(prefix):]
    if "/" in name or name.startswith("."):
        return None
    return get_settings().artifacts_dir / name


def _field_errors(tool: str, exc: ValidationError) -> str:
    """A wrong-typed argument as the model should read it: the field, what it should be."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "string_unicode":  # e.g. "\ud800", valid JSON but no Unicode text
            parts.append(f"{field}: the text holds a lone surrogate, which is not Unicode text; send UTF-8 text")
        else:
            parts.append(f"{field}: {err['msg'][0].lower()}{err['msg'][1:]}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


# ------------------------------------------------------------------ running long tools as jobs


class _StitchMCPServer(MCPServer):
    def __init__(self, default_wait_s: float) -> None:
        super().__init__("stitch-mcp", title="stitch-mcp: CUDA kernel verifier", instructions=INSTRUCTIONS,
                         version=__version__)
        self.runner = JobRunner()
        self.default_wait_s = default_wait_s  # max_wait_s when the caller gives none
        self.stitch_session = f"mcp-{uuid.uuid4().hex[:12]}"  # this server's history (store.py: sessions)

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_field_errors(name, exc.__cause__)) from None
            raise
        finally:  # warnings logged meanwhile reach the client as MCP log messages
            await client_log.flush_to(context)

    async def get_prompt(self, name, arguments=None, context=None):
        # The SDK reports an unknown prompt as an internal error; say what is wrong instead.
        if self._prompt_manager.get_prompt(name) is None:
            known = ", ".join(p.name for p in await self.list_prompts())
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; prompts: {known}")
        return await super().get_prompt(name, arguments, context)

    async def run_job(self, ctx: Context | None, tool: str, output: type[BaseModel], args: dict[str, Any],
                      fn: Callable[..., BaseModel], max_wait_s: float) -> CallToolResult:
        """Start (or join) the job, wait up to max_wait_s forwarding progress, else answer 'running'."""
        try:  # reads the programs: off the event loop
            job = await anyio.to_thread.run_sync(self.runner.submit, tool, args, fn)
        except UserError as exc:
            raise ToolError(str(exc)) from None
        try:
            done = await self.wait(ctx, job, max_wait_s)
        except anyio.get_cancelled_exc_class():
            self.runner.jobs.cancel(job.job_id)
            raise
        if not done:
            return _running_answer(output, tool, job, args)
        return await anyio.to_thread.run_sync(_finished_answer, job)  # may read an image file

    async def wait(self, ctx: Context | None, job: Job, max_wait_s: float) -> bool:
        sent = 0  # progress messages already sent as log messages

        async def forward(p: Progress) -> None:
            nonlocal sent
            await client_log.flush_to(ctx)
            if ctx is None:
                return
            steps, sent = p.messages[sent:], len(p.messages)
            for message in steps:
                await client_log.send(ctx, "info", f"{job.tool}: {message}", f"stitch_mcp.{job.tool}")
            try:
                await ctx.report_progress(p.done, p.total, p.message or None)
            except Exception:  # a client without a progress token: nothing to report to
                pass

        done = await self.runner.wait(job, max_wait_s, forward)
        await client_log.flush_to(ctx)
        return done


def _running_answer(output: type[BaseModel], tool: str, job: Job, args: dict[str, Any]) -> CallToolResult:
    p = job.progress
    summary = (f"{tool} is still running ({p.message or 'working'}); "
               f"call job_status(job_id='{job.job_id}') to wait for the result.")
    required = {name: args[name] for name, f in output.model_fields.items() if f.is_required() and name in args}
    running = output.model_validate({**required, "status": "running", "job_id": job.job_id, "summary": summary})
    return _tool_result(running, summary)


def _finished_answer(job: Job) -> CallToolResult:
    if job.status == "done" and job.result is not None:
        r = job.result
        return _tool_result(r, getattr(r, "summary", ""), [u for u in [getattr(r, "image_uri", None)] if u])
    if job.status == "cancelled":
        raise ToolError(f"{job.tool} was cancelled")
    raise ToolError(job.error or f"{job.tool} failed")


def _job_info(job: Job) -> CallToolResult:
    p = job.progress
    info = JobInfo(job_id=job.job_id, tool=job.tool, status=job.status, progress=p.done, total=p.total,
                   message=p.message, started_at=job.started_at, finished_at=job.finished_at, error=job.error,
                   result=job.result.model_dump(mode="json") if job.result is not None else None)
    if job.status == "running":
        info.summary = f"{job.tool} still running ({p.message or 'working'}); call job_status again."
    elif job.result is not None:
        info.summary = getattr(job.result, "summary", "") or f"{job.tool} done"
    else:
        info.summary = f"{job.tool} {job.status}: {job.error}"
    return _tool_result(info, info.summary, [u for u in [getattr(job.result, "image_uri", None)] if u])


def _stored_job_info(job_id: str, stored: dict[str, Any]) -> CallToolResult:
    """A job of an earlier server process, as the workspace recorded it."""
    result = json.loads(stored["result"]) if stored.get("result") else None
    if stored["status"] == "interrupted":
        summary = (f"{stored['tool']} job interrupted: the server that ran it stopped before it finished (a client "
                   "that exits after one call stops the server with it). Call the tool again with max_wait_s "
                   "long enough for the whole result.")
    elif result:
        summary = result.get("summary") or f"{stored['tool']} {stored['status']}"
    else:
        summary = f"{stored['tool']} job {stored['status']}: {stored['error'] or 'finished'}"
    info = JobInfo(job_id=job_id, tool=stored["tool"], status=stored["status"], error=stored["error"],
                   started_at=stored["started_at"], finished_at=stored["finished_at"], result=result, summary=summary)
    return _tool_result(info, info.summary)



# ------------------------------------------------------------------ tools


def _add_check_tools(mcp: _StitchMCPServer) -> None:
    @mcp.tool(title="Profile a reference program", annotations=RECORDING)
    async def profile_reference(
        ctx: Context,
        reference: Reference = None,
        task_id: TaskId = None,
        backend: Annotated[Literal["auto", "nsys", "torch"], Field(
            description="auto: Nsight Systems when it can write a report, else torch.profiler")] = "auto",
        iterations: Annotated[int, Field(ge=1, le=100, description="profiled iterations after warm-up")] = 5,
        max_wait_s: MaxWait = mcp.default_wait_s,
        roots: ClientRoots = None,
    ) -> Annotated[CallToolResult, ReferenceProfile]:
        """Register a KernelBench reference program as a task and show where its GPU time goes: ops and
        kernels ranked by time, launch overhead, fusion candidates, each op's floor on this GPU, and a
        timeline image. Returns task_id for the other tools."""
        from stitch_mcp.profiling.reference import profile_reference as run

        use_client_roots(roots)
        args = dict(reference=reference, task_id=task_id, backend=backend, iterations=iterations)
        return await mcp.run_job(ctx, "profile_reference", ReferenceProfile, args, run, max_wait_s)

    @mcp.tool(title="Compile and check a candidate kernel", annotations=RECORDING)
    async def compile_and_check(
        ctx: Context,
        candidate: Annotated[str, Field(min_length=1, description=(
            "candidate program defining ModelNew: a path to a .py file or its source text"))],
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
        parent_candidate_id: ParentId = None,
        max_wait_s: MaxWait = mcp.default_wait_s,
        roots: ClientRoots = None,
    ) -> Annotated[CallToolResult, CheckReport]:
        """Build a candidate (ModelNew), prove it correct against the reference on fresh inputs, run
        integrity checks that catch known reward hacks, and time it against PyTorch eager and
        torch.compile. verdict is pass, fail or error; reasons and summary say what to fix first."""
        from stitch_mcp.check import compile_and_check as run

        use_client_roots(roots)
        args = dict(candidate=candidate, reference=reference, task_id=task_id, trials=trials, atol=atol,
                    rtol=rtol, timing=timing, compare_compile=compare_compile,
                    parent_candidate_id=parent_candidate_id, session=session_of(ctx),
                    tolerance=tolerance)
        return await mcp.run_job(ctx, "compile_and_check", CheckReport, args, run, max_wait_s)


def _add_profile_tools(mcp: _StitchMCPServer) -> None:
    @mcp.tool(title="Profile a candidate's kernels", annotations=RECORDING)
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
        max_wait_s: MaxWait = mcp.default_wait_s,
        roots: ClientRoots = None,
    ) -> Annotated[CallToolResult, KernelProfile]:
        """Profile a candidate's kernels with Nsight Compute: why each is slow (memory-, compute-, latency-
        or launch-bound, with the numbers that decide it), how far from this GPU's roofline, occupancy
        limiters, top stall reasons, and ranked suggestions that cite search_cuda_docs entries."""
        from stitch_mcp.profiling.kernel import profile_kernel as run

        use_client_roots(roots)
        args = dict(candidate=candidate, candidate_id=candidate_id, reference=reference, task_id=task_id,
                    kernel_filter=kernel_filter, launch_skip=launch_skip, launch_count=launch_count,
                    sections=sections, session=session_of(ctx))
        return await mcp.run_job(ctx, "profile_kernel", KernelProfile, args, run, max_wait_s)

    @mcp.tool(title="Score a candidate on the rubric", annotations=RECORDING)
    async def rubric_score(
        ctx: Context,
        candidate: Candidate = None,
        candidate_id: CandidateId = None,
        reference: Reference = None,
        task_id: TaskId = None,
        feedback: Annotated[list[str] | None, Field(
            description="the Verifier feedback this candidate was meant to address "
                        "(default: the feedback saved with save_feedback on its parent)")] = None,
        judge: Annotated[Literal["none", "client"], Field(
            description="client: also ask the client's model (MCP sampling) for a second opinion")] = "none",
        parent_candidate_id: ParentId = None,
        max_wait_s: MaxWait = mcp.default_wait_s,
        roots: ClientRoots = None,
        opinion: Annotated[Any, Resolve(judge_request)] = None,
    ) -> Annotated[CallToolResult, RubricReport]:
        """Score a candidate on StitchCUDA's rubric: anti-hacking (PyTorch fallbacks, cached or constant
        outputs, harness tricks), CUDA engineering, operator coverage and skill compliance. verdict is
        clean, suspect or hack; a hack scores 0 overall."""
        from stitch_mcp.score.client_judge import apply_client_judgement
        from stitch_mcp.rubric import rubric_score as run

        use_client_roots(roots)
        args = dict(candidate=candidate, candidate_id=candidate_id, reference=reference, task_id=task_id,
                    feedback=feedback, judge="none", parent_candidate_id=parent_candidate_id, session=session_of(ctx))
        result = await mcp.run_job(ctx, "rubric_score", RubricReport, args, run, max_wait_s)
        if judge != "client" or not result.structured_content or result.structured_content.get("status") != "done":
            return result
        answer, unavailable = sampled_text(opinion)
        report = await anyio.to_thread.run_sync(apply_client_judgement,
                                                RubricReport.model_validate(result.structured_content),
                                                answer, unavailable)
        return _tool_result(report, report.summary)


def _add_record_tools(mcp: _StitchMCPServer) -> None:
    # save_plan replaces the task's plan (destructive, idempotent); save_feedback adds a record.
    @mcp.tool(title="Save the plan for a task", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False))
    def save_plan(
        task_id: Annotated[str, Field(min_length=1, description="task id from profile_reference")],
        plan: Annotated[str, Field(min_length=1, max_length=100_000, description=
                                   "the plan, in the planner prompt's structure (Target ops, Fusion groups, ...)")],
    ) -> str:
        """Store the Planner's plan with a task (replacing an earlier plan); routing checks that its target
        ops are where the time goes."""
        from stitch_mcp.loop import save_plan as run

        try:
            return run(task_id, plan)
        except UserError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(title="Save feedback on a candidate", annotations=RECORDING)
    def save_feedback(
        ctx: Context,
        candidate_id: Annotated[str, Field(min_length=1, description="the candidate the feedback is about")],
        items: Annotated[list[str], Field(min_length=1, max_length=20, description=
                                          "ranked feedback items, each '[tag] what - where - why - how to check'")],
    ) -> str:
        """Store the Verifier's feedback on a candidate; the next candidate's skill compliance is graded on it."""
        from stitch_mcp.loop import save_feedback as run

        try:
            return run(candidate_id, items, session=session_of(ctx))
        except UserError as exc:
            raise ToolError(str(exc)) from None


def _add_reading_tools(mcp: _StitchMCPServer) -> None:
    @mcp.tool(title="Search CUDA documentation", annotations=READING)
    async def search_cuda_docs(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="API name or question")],
        k: Annotated[int, Field(ge=1, le=50, description="number of results")] = 5,
        kinds: Annotated[list[str] | None, Field(
            description="restrict to these kinds: card, header, bindings, user")] = None,
        include_text: Annotated[bool, Field(description="include each result's whole text")] = False,
        max_wait_s: MaxWait = mcp.default_wait_s,
    ) -> Annotated[CallToolResult, SearchResults]:
        """Search CUDA documentation offline: knowledge cards on optimisation techniques and profiler
        metrics, the installed toolkit's API reference, and your own documents. Exact API names match
        first. Each result has an id readable as stitch://docs/{id}. While the index is still being built,
        the answer is status 'running' with a job_id."""
        from stitch_mcp.search import search_cuda_docs as run

        args = dict(query=query, k=k, kinds=kinds, include_text=include_text)
        return await mcp.run_job(ctx, "search_cuda_docs", SearchResults, args, run, max_wait_s)

    @mcp.tool(title="Wait for a running job", annotations=READING)
    async def job_status(
        ctx: Context,
        job_id: Annotated[str, Field(min_length=1, description="job_id from a tool that answered 'running'")],
        max_wait_s: MaxWait = mcp.default_wait_s,
    ) -> Annotated[CallToolResult, JobInfo]:
        """Wait for a long call's job and return its finished result (or status 'running' again)."""
        try:
            job = mcp.runner.jobs.get(job_id)
        except UserError as exc:
            stored = await anyio.to_thread.run_sync(get_workspace().job, job_id)
            if stored is None:
                raise ToolError(str(exc)) from None
            return _stored_job_info(job_id, stored)
        await mcp.wait(ctx, job, max_wait_s)  # a cancelled job_status leaves the job running
        return await anyio.to_thread.run_sync(_job_info, job)  # may read an image file


# ------------------------------------------------------------------ prompts, resources, completions

TaskIdArg = Annotated[str, Field(description="task id from profile_reference (stitch://tasks lists them)")]
CandidateIdArg = Annotated[str, Field(description="candidate id from compile_and_check")]


def _add_prompts(mcp: _StitchMCPServer) -> None:
    from stitch_mcp import prompts as prompt_text

    def rendered(render: Callable[[str], str], value: str) -> str:
        try:
            return render(value)
        except UserError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    @mcp.prompt(title="Plan a CUDA implementation")
    def planner(task_id: TaskIdArg) -> str:
        """Plan a CUDA implementation of a task from its reference and profile."""
        return rendered(prompt_text.render_planner, task_id)

    @mcp.prompt(title="Verify a candidate and route the next step")
    def verifier(candidate_id: CandidateIdArg, ctx: Context) -> str:
        """Review a checked candidate and decide the next step: fix, refine, replan or accept."""
        return rendered(functools.partial(prompt_text.render_verifier, session=session_of(ctx)), candidate_id)


def _found(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except UserError as exc:
        raise ResourceNotFoundError(str(exc)) from None


def _add_resources(mcp: _StitchMCPServer) -> None:
    from stitch_mcp import workspace_views as views
    from stitch_mcp.search import get_doc

    def add(uri: str, name: str, title: str, description: str, read: Callable[..., Any],
            mime_type: str = "application/json") -> None:
        mcp.resource(uri, name=name, title=title, description=description, mime_type=mime_type)(read)

    add("stitch://tasks", "tasks", "Tasks", "Every task in the workspace.", lambda: json.dumps(
        [{"task_id": t.task_id, "name": t.name, "created_at": t.created_at} for t in get_workspace().tasks()],
        indent=1))
    add("stitch://tasks/{task_id}", "task", "Task", "A task: its reference source, plan and latest reference "
        "profile.", lambda task_id: _found(lambda: views.task_json(task_id)))
    add("stitch://tasks/{task_id}/history", "task_history", "Task history", "A task's candidates in order, with "
        "each one's verdicts and routing decisions.", lambda task_id: _found(lambda: views.history_json(task_id)))
    add("stitch://tasks/{task_id}/best", "best_candidate", "Best candidate", "The task's fastest accepted "
        "candidate.", lambda task_id: _found(lambda: views.best_json(task_id)))
    add("stitch://candidates/{candidate_id}", "candidate", "Candidate", "A candidate: its source and every report "
        "on it.", lambda candidate_id: _found(lambda: views.candidate_json(candidate_id)))
    add("stitch://artifacts/{name}", "profile_image", "Profile image", "An image written by a profiler "
        "(timeline, roofline).", _artifact_bytes, mime_type="image/png")
    add("stitch://docs/{doc_id}", "doc_chunk", "Documentation chunk", "A whole documentation chunk found by "
        "search_cuda_docs.", lambda doc_id: _found(lambda: get_doc(doc_id)), mime_type="text/markdown")


def _artifact_bytes(name: str) -> bytes:
    path = _artifact_path(f"stitch://artifacts/{name}")
    if path is None or not path.is_file():
        raise ResourceNotFoundError(f"no artifact named {name!r}")
    return path.read_bytes()


def _known_ids(argument: str) -> list[str]:
    """Task or candidate ids in the workspace, newest first."""
    ws = get_workspace()
    tasks = sorted(ws.tasks(), key=lambda t: t.created_at, reverse=True)
    if argument == "task_id":
        return [t.task_id for t in tasks]
    if argument == "candidate_id":
        candidates = [c for t in tasks for c in ws.candidates(t.task_id)]
        return [c.candidate_id for c in sorted(candidates, key=lambda c: c.created_at, reverse=True)]
    return []


def _add_completions_and_logging(mcp: _StitchMCPServer) -> None:
    @mcp.completion()
    async def complete_ids(ref: PromptReference | ResourceTemplateReference, argument, context) -> Completion:
        ids = await anyio.to_thread.run_sync(_known_ids, argument.name)
        matching = [i for i in ids if i.startswith(argument.value or "")]
        return Completion(values=matching[:100], total=len(matching), has_more=len(matching) > 100)

    async def set_level(ctx, params: SetLevelRequestParams) -> EmptyResult:
        client_log.level_name = params.level
        return EmptyResult()

    mcp._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


DEFAULT_WAIT_S = 45.0  # under the ~60 s after which many clients give up on a call


def create_server(default_wait_s: float = DEFAULT_WAIT_S) -> MCPServer:
    """The server. default_wait_s is max_wait_s when a call gives none: 45 s suits clients that stay
    connected (a longer job answers 'running'); a one-shot client (`serve --max-wait-s 600`) waits
    for the result instead."""
    mcp = _StitchMCPServer(default_wait_s)
    for add in (_add_check_tools, _add_profile_tools, _add_record_tools, _add_reading_tools, _add_prompts,
                _add_resources, _add_completions_and_logging):
        add(mcp)
    for tool in mcp._tool_manager.list_tools():  # descriptions without the docstrings' indentation
        tool.description = inspect.cleandoc(tool.description or "")
    return mcp
