"""The workspace: tasks, plans, candidates, reports, routing decisions and jobs, in SQLite (WAL).

Ids are content hashes, so registering the same reference twice gives the same task and
resubmitting the same candidate source for a task gives the same candidate: cached builds,
baselines and reports line up without the caller keeping ids.

History, though, belongs to a *session* (one MCP client connection, or one `STITCH_SESSION` for
the CLI): each session keeps its own lineage (which candidate is whose parent), its own feedback
and its own routing decisions, so two unrelated runs on one machine never grade each other's
candidates against each other's feedback, even when they submit the same source.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import BaseModel, ValidationError

from stitch_mcp.errors import NotFound
from stitch_mcp.models import CandidateRecord, Route, TaskRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL, path TEXT,
    created_at REAL NOT NULL, plan TEXT);
CREATE TABLE IF NOT EXISTS candidates (
    candidate_id TEXT PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks(task_id),
    source TEXT NOT NULL, source_hash TEXT NOT NULL, parent_id TEXT, path TEXT, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS candidates_by_task ON candidates(task_id, created_at);
CREATE TABLE IF NOT EXISTS reports (
    report_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, task_id TEXT,
    candidate_id TEXT, created_at REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS reports_by_candidate ON reports(candidate_id, kind, created_at);
CREATE INDEX IF NOT EXISTS reports_by_task ON reports(task_id, kind, created_at);
CREATE TABLE IF NOT EXISTS routes (
    route_id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, candidate_id TEXT NOT NULL,
    decision TEXT NOT NULL, body TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS lineage (
    session TEXT NOT NULL, candidate_id TEXT NOT NULL, task_id TEXT NOT NULL, parent_id TEXT,
    created_at REAL NOT NULL, PRIMARY KEY (session, candidate_id));
CREATE INDEX IF NOT EXISTS lineage_by_task ON lineage(session, task_id, created_at);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, tool TEXT NOT NULL, status TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, error TEXT, result TEXT);
"""


log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

# columns added after the first release: (table, column, declaration), added to older databases
_ADDED_COLUMNS = [("reports", "session", "TEXT"), ("routes", "session", "TEXT")]
DEFAULT_SESSION = "local"


def session_name(session: str | None = None) -> str:
    """The session a call belongs to: the caller's (the MCP server passes one per client
    connection), else the `session` setting (STITCH_SESSION / --session), else "local"."""
    if session:
        return session
    from stitch_mcp.config import get_settings

    return getattr(get_settings(), "session", "") or DEFAULT_SESSION


def content_id(prefix: str, *parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return f"{prefix}-{h.hexdigest()[:12]}"


class Workspace:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        # one process at a time sets the workspace up: processes opening a new one together (Ray
        # tasks, eval's jobs) otherwise met "database is locked" on the WAL switch and added the
        # same column twice
        from filelock import FileLock

        with FileLock(self.path.with_name(self.path.name + ".init.lock")):
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=30000")
            self._db.executescript(SCHEMA)
            for table, column, decl in _ADDED_COLUMNS:
                have = {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _exec(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, args)

    def _all(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- tasks
    def add_task(self, source: str, name: str = "inline", path: str | None = None) -> TaskRecord:
        task_id = content_id("t", source)
        self._exec("INSERT OR IGNORE INTO tasks(task_id, name, source, path, created_at) VALUES (?,?,?,?,?)",
                   (task_id, name, source, path, time.time()))
        return self.task(task_id)

    def task(self, task_id: str) -> TaskRecord:
        rows = self._all("SELECT * FROM tasks WHERE task_id=?", (task_id,))
        if not rows:
            raise NotFound(f"task_id: unknown task {task_id!r}; register the reference with profile_reference "
                           "or pass `reference`")
        return TaskRecord(**dict(rows[0]))

    def tasks(self) -> list[TaskRecord]:
        return [TaskRecord(**dict(r)) for r in self._all("SELECT * FROM tasks ORDER BY created_at")]

    def set_plan(self, task_id: str, plan: str) -> None:
        self.task(task_id)
        self._exec("UPDATE tasks SET plan=? WHERE task_id=?", (plan, task_id))

    # -- candidates and their lineage (per session)
    def add_candidate(self, task_id: str, source: str, path: str | None = None,
                      parent_id: str | None = None, session: str | None = None) -> CandidateRecord:
        """Store a candidate and its place in the session's lineage.

        parent_id: the candidate this one was written from; default, the candidate this session
        submitted last on the task (its first lineage is kept when the same source comes again).
        """
        session = session_name(session)
        candidate_id = content_id("c", task_id, source)
        if parent_id is not None:
            self._check_parent(task_id, candidate_id, parent_id)
        known = self._lineage_row(session, candidate_id)
        if parent_id is None and known is None:
            latest = self.lineage(task_id, session)
            parent_id = next((c for c in reversed(latest) if c != candidate_id), None)
        now = time.time()
        self._exec("INSERT OR IGNORE INTO candidates(candidate_id, task_id, source, source_hash, parent_id, path, "
                   "created_at) VALUES (?,?,?,?,?,?,?)",
                   (candidate_id, task_id, source, content_id("s", source), parent_id, path, now))
        if known is None:
            self._exec("INSERT INTO lineage(session, candidate_id, task_id, parent_id, created_at) VALUES (?,?,?,?,?)",
                       (session, candidate_id, task_id, parent_id, now))
        elif parent_id is not None and parent_id != known["parent_id"]:
            self._exec("UPDATE lineage SET parent_id=? WHERE session=? AND candidate_id=?",
                       (parent_id, session, candidate_id))
        return self.candidate(candidate_id, session)

    def _check_parent(self, task_id: str, candidate_id: str, parent_id: str) -> None:
        from stitch_mcp.errors import UserError

        if parent_id == candidate_id:
            raise UserError("parent_candidate_id: a candidate cannot be its own parent (same source)")
        rows = self._all("SELECT task_id FROM candidates WHERE candidate_id=?", (parent_id,))
        if not rows:
            raise UserError(f"parent_candidate_id: unknown candidate {parent_id!r}")
        if rows[0]["task_id"] != task_id:
            raise UserError(f"parent_candidate_id: {parent_id} belongs to task {rows[0]['task_id']}, not {task_id}")

    def home_session(self, candidate_id: str, session: str | None = None) -> str:
        """The session whose history the candidate's lineage belongs to: this one when it submitted
        the candidate, else the one that submitted it first (a restarted server, or another client
        looking at it by id, sees the candidate's own history, never its own unrelated one)."""
        session = session_name(session)
        if self._lineage_row(session, candidate_id) is not None:
            return session
        rows = self._all("SELECT session FROM lineage WHERE candidate_id=? ORDER BY created_at, rowid LIMIT 1",
                         (candidate_id,))
        return rows[0]["session"] if rows else session

    def _lineage_row(self, session: str, candidate_id: str) -> sqlite3.Row | None:
        rows = self._all("SELECT * FROM lineage WHERE session=? AND candidate_id=?", (session, candidate_id))
        return rows[0] if rows else None

    def candidate(self, candidate_id: str, session: str | None = None) -> CandidateRecord:
        """The candidate, with parent_id as its home session (home_session) knows it; the stored
        one for a candidate from before sessions existed."""
        rows = self._all("SELECT * FROM candidates WHERE candidate_id=?", (candidate_id,))
        if not rows:
            raise NotFound(f"candidate_id: unknown candidate {candidate_id!r}; pass `candidate` (path or source)")
        record = dict(rows[0])
        known = self._lineage_row(self.home_session(candidate_id, session), candidate_id)
        if known is not None:
            record["parent_id"] = known["parent_id"]
        return CandidateRecord(**record)

    def candidates(self, task_id: str) -> list[CandidateRecord]:
        rows = self._all("SELECT * FROM candidates WHERE task_id=? ORDER BY created_at, rowid", (task_id,))
        return [CandidateRecord(**dict(r)) for r in rows]

    def lineage(self, task_id: str, session: str | None = None) -> list[str]:
        """The candidate ids this session submitted on the task, oldest first."""
        rows = self._all("SELECT candidate_id FROM lineage WHERE session=? AND task_id=? ORDER BY created_at, rowid",
                         (session_name(session), task_id))
        return [r["candidate_id"] for r in rows]

    def ancestors(self, candidate_id: str, session: str | None = None) -> list[str]:
        """The candidate's line back to its first ancestor, oldest first, ending with the candidate."""
        chain, seen = [candidate_id], {candidate_id}
        parent = self.candidate(candidate_id, session).parent_id
        while parent and parent not in seen:
            chain.append(parent)
            seen.add(parent)
            try:
                parent = self.candidate(parent, session).parent_id
            except NotFound:
                break
        return chain[::-1]

    # -- reports
    def add_report(self, kind: str, report: BaseModel | dict, task_id: str | None = None,
                   candidate_id: str | None = None, session: str | None = None) -> int:
        """Store a report; `session` marks the ones that belong to one session's history (feedback)."""
        body = report.model_dump_json() if isinstance(report, BaseModel) else json.dumps(report)
        cur = self._exec("INSERT INTO reports(kind, task_id, candidate_id, created_at, body, session) "
                         "VALUES (?,?,?,?,?,?)", (kind, task_id, candidate_id, time.time(), body, session))
        return int(cur.lastrowid)

    def latest_report(self, kind: str, *, task_id: str | None = None, candidate_id: str | None = None,
                      session: str | None = None) -> dict[str, Any] | None:
        """The newest report of a kind; with `session`, only that session's."""
        col, val = ("candidate_id", candidate_id) if candidate_id is not None else ("task_id", task_id)
        where, args = f"kind=? AND {col}=?", [kind, val]
        if session is not None:
            where += " AND session=?"
            args.append(session)
        rows = self._all(f"SELECT body FROM reports WHERE {where} ORDER BY created_at DESC, report_id DESC LIMIT 1",
                         tuple(args))
        return json.loads(rows[0]["body"]) if rows else None

    def update_report(self, kind: str, task_id: str, change: Callable[[dict[str, Any] | None], dict[str, Any] | None]
                      ) -> None:
        """Store `change` of a task's newest report of a kind (None: store nothing) in one write
        transaction: two processes updating one record together (two checks of a task ending at
        once) each build on the other's change instead of losing it."""
        with self._lock:  # reentrant: latest_report and add_report take it too, inside the transaction
            self._db.execute("BEGIN IMMEDIATE")
            try:
                body = change(self.latest_report(kind, task_id=task_id))
                if body is not None:
                    self.add_report(kind, body, task_id=task_id)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def finished_report(self, kind: str, model: type[M], *, task_id: str | None = None,
                        candidate_id: str | None = None) -> M | None:
        """The newest report of a kind, read as the model it was stored from; None when there is none
        or it is still running. A body that does not read as the model (stored by an older version, or
        by hand) is None too, with a warning: routing and the rubric go on without it rather than guess
        from a dict."""
        body = self.latest_report(kind, task_id=task_id, candidate_id=candidate_id)
        if body is None or (isinstance(body, dict) and body.get("status") == "running"):
            return None
        try:
            return model.model_validate(body)
        except ValidationError:
            log.warning("stored %s report of %s does not read as a %s; going on without it", kind,
                        candidate_id if candidate_id is not None else task_id, model.__name__)
            return None

    def reports(self, *, task_id: str | None = None, candidate_id: str | None = None) -> list[dict[str, Any]]:
        col, val = ("candidate_id", candidate_id) if candidate_id is not None else ("task_id", task_id)
        rows = self._all(f"SELECT report_id, kind, task_id, candidate_id, created_at, body FROM reports "
                         f"WHERE {col}=? ORDER BY created_at, report_id", (val,))
        return [{**{k: r[k] for k in ("report_id", "kind", "task_id", "candidate_id", "created_at")},
                 "body": json.loads(r["body"])} for r in rows]

    # -- routing decisions
    def add_route(self, task_id: str, candidate_id: str, route: Route, session: str | None = None) -> None:
        self._exec("INSERT INTO routes(task_id, candidate_id, decision, body, created_at, session) "
                   "VALUES (?,?,?,?,?,?)", (task_id, candidate_id, route.decision, route.model_dump_json(),
                                            time.time(), session_name(session)))

    def routes(self, task_id: str, session: str | None = None) -> list[tuple[str, Route]]:
        """Routing decisions on the task, oldest first; with `session`, only that session's."""
        where, args = "task_id=?", [task_id]
        if session is not None:
            where += " AND session=?"
            args.append(session)
        rows = self._all(f"SELECT candidate_id, body FROM routes WHERE {where} ORDER BY created_at, route_id",
                         tuple(args))
        return [(r["candidate_id"], Route.model_validate_json(r["body"])) for r in rows]

    # -- jobs (so a restart can report work it interrupted)
    def job_started(self, job_id: str, tool: str) -> None:
        self._exec("INSERT OR REPLACE INTO jobs(job_id, tool, status, started_at) VALUES (?,?,?,?)",
                   (job_id, tool, "running", time.time()))

    def job_finished(self, job_id: str, status: str, error: str | None = None, result: str | None = None) -> None:
        self._exec("UPDATE jobs SET status=?, finished_at=?, error=?, result=? WHERE job_id=?",
                   (status, time.time(), error, result, job_id))

    def job(self, job_id: str) -> dict[str, Any] | None:
        rows = self._all("SELECT * FROM jobs WHERE job_id=?", (job_id,))
        return dict(rows[0]) if rows else None

    def mark_interrupted(self) -> int:
        """Jobs left 'running' by a server that died: they will never finish."""
        cur = self._exec("UPDATE jobs SET status='interrupted', finished_at=?, error=? WHERE status='running'",
                         (time.time(), "the server stopped while this job ran; submit the call again"))
        return cur.rowcount


_workspaces: dict[Path, Workspace] = {}
_ws_lock = threading.Lock()


def get_workspace(path: Path | None = None) -> Workspace:
    """One open workspace per database file, per process."""
    from stitch_mcp.config import get_settings

    path = Path(path or get_settings().db_path).expanduser()
    with _ws_lock:
        if path not in _workspaces:
            _workspaces[path] = Workspace(path)
        return _workspaces[path]
