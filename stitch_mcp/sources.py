"""Reading `reference` and `candidate` arguments: a path to a .py file, or the source text itself.

The rule, the same on every tool: a string containing a newline is source; anything else is a
path, which must be a readable UTF-8 regular file inside the allowed folders and not exceed the
size limit. Errors name the field so the calling model knows which argument to fix.

A path is opened once and everything is checked on the opened file (its type, size and real
path, through the descriptor), so swapping a symlink between a check and the read changes
nothing. It is opened non-blocking and must be a regular file: a FIFO or a device in an allowed
folder is refused instead of blocking the reader. A path outside the allowed folders gets the
same answer whether or not something exists there.
"""

from __future__ import annotations

import ast
import contextvars
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError

# The folders the connected MCP client offered as its roots (set by the server per call; None when
# the client offers none). A context variable, so concurrent HTTP sessions never see each other's.
client_roots: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar("client_roots", default=None)


@dataclass(frozen=True)
class Program:
    source: str
    path: str | None = None

    @property
    def name(self) -> str:
        return Path(self.path).stem if self.path else "inline"


def _too_broad(folder: Path) -> bool:
    """`/`, a home directory or a folder holding home directories: never a default allowed folder."""
    home = Path.home().resolve()
    if folder == Path(folder.anchor) or home.is_relative_to(folder):  # /, /home, the home itself
        return True
    return folder.parent == home.parent and folder.parent != Path(folder.anchor)  # another user's home


def allowed_roots() -> list[Path]:
    """The folders a path argument may point into, in order of precedence: the allowed_roots setting,
    the client's roots, else the server's working directory and data directory. A working directory
    of `/` or a home directory is never allowed by default (a client started there would expose every
    file): then no folder is allowed until the setting or the client's roots name one."""
    settings = get_settings()
    if settings.allowed_roots:
        return [Path(p).expanduser().resolve() for p in settings.allowed_roots.split(os.pathsep) if p]
    offered = client_roots.get()
    if offered:
        return list(offered)
    cwd = Path.cwd().resolve()
    return [] if _too_broad(cwd) else [cwd, settings.data_dir.expanduser().resolve()]


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _outside_error(field: str, value: str, roots: list[Path]) -> UserError:
    if not roots:
        return UserError(
            f"{field}: no folder is allowed for paths: the server started in {Path.cwd()}, which is too broad "
            "to expose, and neither STITCH_ALLOWED_ROOTS nor the client's roots name one; pass the program's "
            "source text instead, start the server in your project folder, or set STITCH_ALLOWED_ROOTS")
    allowed = ", ".join(str(r) for r in roots)
    return UserError(f"{field}: {value} is not a file inside the allowed folders ({allowed}); "
                     "set STITCH_ALLOWED_ROOTS or your client's roots to widen them")


def _read_path(value: str, field: str, limit: int) -> Program:
    roots = allowed_roots()
    shown = value if len(value) <= 200 else value[:200] + "..."
    try:
        path = Path(os.path.abspath(Path(value).expanduser()))
        # Where the name leads before opening (symlinked folders followed): outside the roots, the
        # answer is the same whether or not anything is there.
        leads_to = path.resolve(strict=False)
    except (ValueError, RuntimeError, OSError) as exc:  # a NUL byte, ~unknown-user, a symlink loop
        raise UserError(f"{field}: {shown!r} is not a usable path ({exc}); give a path to a .py file "
                        "or the program's source text") from None
    if not _inside(leads_to, roots):
        raise _outside_error(field, shown, roots)
    return _open_and_read(path, shown, field, limit, roots)


def _open_and_read(path: Path, value: str, field: str, limit: int, roots: list[Path]) -> Program:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise UserError(f"{field}: no such file: {value} (a string without a newline is read as a path)") from None
    except PermissionError:
        raise UserError(f"{field}: {value} is not readable") from None
    except OSError as exc:
        raise UserError(f"{field}: cannot open {value}: {exc.strerror}") from None
    try:
        return _read_opened(fd, path, value, field, limit, roots)
    finally:
        os.close(fd)


def _real_path(fd: int, fallback: Path) -> Path:
    """The opened file's own path (Linux: through /proc/self/fd), not the name it was opened by."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return fallback.resolve()


def _read_opened(fd: int, path: Path, value: str, field: str, limit: int, roots: list[Path]) -> Program:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise UserError(f"{field}: {value} is a directory; give the .py file")
    real = _real_path(fd, path)
    if not _inside(real, roots):  # the name changed under us (a swapped symlink): same answer as outside
        raise _outside_error(field, value, roots)
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"{field}: {value} is not a regular file (a FIFO, socket or device); give a .py file")
    if info.st_size > limit:
        raise UserError(f"{field}: {value} is {info.st_size} bytes, over the limit of {limit}")
    chunks, size = [], 0
    while size <= limit:
        try:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        except OSError as exc:
            raise UserError(f"{field}: cannot read {value}: {exc.strerror}") from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:  # grew after fstat
        raise UserError(f"{field}: {value} is over the limit of {limit} bytes")
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{field}: {value} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return Program(text, str(real))


def _check_text(value: str, field: str, limit: int) -> None:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate such as \ud800: not text any file could hold
        raise UserError(f"{field}: the source holds a character that is not valid Unicode text "
                        f"({value[exc.start]!r} at character {exc.start}, a lone surrogate); "
                        "send the program as UTF-8 text") from None
    if size > limit:
        raise UserError(f"{field}: source is {size} bytes, over the limit of {limit}")


def load_program(value: str | Program, field: str) -> Program:
    """A program from a path or its source text; one already read (a job's, see jobs.read_programs) as is."""
    if isinstance(value, Program):
        return value
    limit = get_settings().max_source_bytes
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{field}: give a path to a .py file or the program's source text")
    _check_text(value, field, limit)
    if "\n" in value:
        return Program(value)
    return _read_path(value, field, limit)


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


def resolve_task(reference: str | Program | None, task_id: str | None):
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


def resolve_candidate(candidate: str | Program | None, candidate_id: str | None, task=None, parent_id: str | None = None,
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
