"""Reading `reference` and `candidate` arguments: a path to a .py file, or the source text itself.

The rule, the same on every tool: a string containing a newline is source; anything else is a
path, which must exist, be a readable UTF-8 file inside the allowed roots and not exceed the size
limit. Errors name the field so the calling model knows which argument to fix.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError


@dataclass(frozen=True)
class Program:
    source: str
    path: str | None = None

    @property
    def name(self) -> str:
        return Path(self.path).stem if self.path else "inline"


def load_program(value: str, field: str) -> Program:
    settings = get_settings()
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{field}: give a path to a .py file or the program's source text")
    if "\n" in value:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > settings.max_source_bytes:
            raise UserError(f"{field}: source is {size} bytes, over the limit of {settings.max_source_bytes}")
        return Program(value)
    path = Path(value).expanduser()
    if not path.exists():
        raise UserError(f"{field}: no such file: {value} (a string without a newline is read as a path)")
    if path.is_dir():
        raise UserError(f"{field}: {value} is a directory; give the .py file")
    resolved = path.resolve()
    roots = settings.roots()
    if not any(resolved.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise UserError(f"{field}: {value} is outside the allowed roots ({allowed}); "
                        "set STITCH_ALLOWED_ROOTS to widen them")
    size = resolved.stat().st_size
    if size > settings.max_source_bytes:
        raise UserError(f"{field}: {value} is {size} bytes, over the limit of {settings.max_source_bytes}")
    try:
        text = resolved.read_bytes().decode("utf-8")
    except PermissionError:
        raise UserError(f"{field}: {value} is not readable") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{field}: {value} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return Program(text, str(resolved))


def defined_names(source: str) -> set[str]:
    """Top-level classes and functions of a program (empty when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}


def check_reference(program: Program, field: str = "reference") -> None:
    """A KernelBench reference defines Model, get_inputs and get_init_inputs."""
    try:
        ast.parse(program.source)
    except SyntaxError as exc:
        raise UserError(f"{field}: syntax error at line {exc.lineno}: {exc.msg}") from None
    missing = {"Model", "get_inputs", "get_init_inputs"} - defined_names(program.source)
    if missing:
        raise UserError(f"{field}: not a KernelBench program; it does not define {', '.join(sorted(missing))}")


def resolve_task(reference: str | None, task_id: str | None):
    """The task a call is about: registered from `reference`, or looked up by `task_id`."""
    from stitch_mcp.store import get_workspace

    ws = get_workspace()
    if reference:
        program = load_program(reference, "reference")
        check_reference(program)
        task = ws.add_task(program.source, name=program.name, path=program.path)
        if task_id and task_id != task.task_id:
            raise UserError(f"task_id: {task_id} does not match the given reference (its task is {task.task_id})")
        return task
    if task_id:
        return ws.task(task_id)
    raise UserError("reference: give `reference` (path or source) or `task_id`")


def resolve_candidate(candidate: str | None, candidate_id: str | None, task=None, parent_id: str | None = None,
                      session: str | None = None):
    """The candidate a call is about: stored from `candidate` under `task` (in the session's lineage,
    after `parent_id` or the session's last candidate), or looked up by id."""
    from stitch_mcp.store import get_workspace

    ws = get_workspace()
    if candidate:
        if task is None:
            raise UserError("reference: a new candidate needs `reference` or `task_id` to be checked against")
        program = load_program(candidate, "candidate")
        return ws.add_candidate(task.task_id, program.source, path=program.path, parent_id=parent_id,
                                session=session)
    if candidate_id:
        record = ws.candidate(candidate_id, session)
        if task is not None and record.task_id != task.task_id:
            raise UserError(f"candidate_id: {candidate_id} belongs to task {record.task_id}, not {task.task_id}")
        if parent_id is not None:  # naming the parent places a known candidate in this session's lineage
            record = ws.add_candidate(record.task_id, record.source, path=record.path, parent_id=parent_id,
                                      session=session)
        return record
    raise UserError("candidate: give `candidate` (path or source) or `candidate_id`")
