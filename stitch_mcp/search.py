"""search_cuda_docs: offline hybrid retrieval over CUDA documentation (issue 6).

Exact API names first, then reciprocal-rank fusion of BM25 (bm25s) and dense MiniLM vectors
(chromadb). The index lives in settings.index_dir, builds on first use (or `stitch-mcp index
build`) and rebuilds only what changed. See stitch_mcp/docs/ for the parts.

Nothing heavy is imported at module import: chromadb, onnxruntime and bm25s load on first search.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import IndexReport, SearchHit, SearchResults

log = logging.getLogger(__name__)

KINDS = ("card", "header", "bindings", "user")
MAX_QUERY_CHARS = 2000
MAX_K = 50

_lock = threading.Lock()
_index = None  # stitch_mcp.docs.index.DocIndex, opened once per process and index_dir
_index_notes: list[str] = []


def _get_index(progress: Progress | None = None, force: bool = False):
    """The opened index for the current settings.index_dir (built or refreshed on first use)."""
    global _index, _index_notes
    from stitch_mcp.docs.index import DocIndex  # noqa: PLC0415

    index_dir = Path(get_settings().index_dir).expanduser()
    with _lock:
        if _index is not None and _index.dir == index_dir and not force:
            return _index, None
        idx = DocIndex(index_dir)
        report = idx.open(progress, force=force)
        _index, _index_notes = idx, list(report.get("notes", []))
        return idx, report


def reset() -> None:
    """Forget the opened index (tests; after the files changed underneath)."""
    global _index
    with _lock:
        _index = None


def _check_kinds(kinds: list[str] | None) -> list[str] | None:
    if not kinds:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise UserError(f"unknown kind(s) {', '.join(map(repr, bad))}; kinds are: {', '.join(KINDS)}")
    return list(dict.fromkeys(kinds))


def search_cuda_docs(*, query: str, k: int = 5, kinds: list[str] | None = None, include_text: bool = False,
                     progress: Progress | None = None) -> SearchResults:
    if not isinstance(query, str) or not query.strip():
        raise UserError("the query is empty: give an API name (e.g. cudaMemcpyAsync) or a question")
    query = " ".join(query.split())
    if len(query) > MAX_QUERY_CHARS:
        raise UserError(f"the query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}: "
                        "ask about one API or one question at a time")
    if not isinstance(k, int) or k < 1 or k > MAX_K:
        raise UserError(f"k must be between 1 and {MAX_K}")
    kinds = _check_kinds(kinds)
    if progress is not None and _lock.locked():  # e.g. the build serve starts in the background
        progress.update(0, None, "waiting for the documentation index, which is being built")
    idx, report = _get_index(progress)
    notes: list[str] = []
    if report and (report.get("sources_parsed") or report.get("embedded")):
        notes.append(f"built the documentation index ({report['chunks']} chunks, {report['seconds']} s)")
    with idx.lock:
        ranked = idx.search(query, k, kinds)
        hits = []
        for i, score in ranked:
            c = idx.chunks[i]
            hits.append(SearchHit(id=c["id"], title=c["title"], source=c["source"], kind=c["kind"],
                                  snippet=idx.snippet(i, query), score=score,
                                  text=c["text"] if include_text else None))
        mode = "hybrid" if idx.collection is not None else "lexical"
        if idx.dense_note:
            notes.append(idx.dense_note)
    notes += [n for n in _index_notes if n not in notes and n != idx.dense_note]
    if kinds and not hits:
        notes.append(f"nothing of kind {', '.join(kinds)} matched; try without kinds")
    lines = [f"{len(hits)} result(s) for {query!r} ({mode}):"]
    for n, h in enumerate(hits, 1):
        lines.append(f"{n}. {h.title} [stitch://docs/{h.id}] — {h.snippet[:160].replace(chr(10), ' ')}")
    return SearchResults(query=query, mode=mode, results=hits, notes=notes, summary="\n".join(lines))


def get_doc(doc_id: str) -> str:
    """A whole chunk as Markdown, for the stitch://docs/{id} resource."""
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise UserError("empty document id")
    idx, _ = _get_index()
    c = idx.get(doc_id.strip())
    return f"# {c['title']}\n\nSource: {c['source']}\nKind: {c['kind']} · id: {c['id']}\n\n{c['text']}\n"


def build_index(*, force: bool = False, progress: Progress | None = None) -> IndexReport:
    """`stitch-mcp index build`: bring the index up to date (or rebuild it whole with force)."""
    _, report = _get_index(progress, force=True) if force else _refresh(progress)
    return _report(report)


def _refresh(progress):
    reset()
    return _get_index(progress)


def add_documents(path: str, *, progress: Progress | None = None) -> IndexReport:
    """`stitch-mcp index add PATH`: index a folder (or file) of Markdown, HTML or text."""
    global _index
    from stitch_mcp.docs.index import DocIndex  # noqa: PLC0415

    index_dir = Path(get_settings().index_dir).expanduser()
    with _lock:
        idx = DocIndex(index_dir)
        report = idx.add_user_path(path, progress)
        _index = idx
    return _report(report)


def _report(report: dict | None) -> IndexReport:
    report = report or {}
    summary = (f"documentation index: {report.get('chunks', 0)} chunks "
               f"({', '.join(f'{k} {v}' for k, v in sorted(report.get('by_kind', {}).items()))}); "
               f"{report.get('dense_vectors', 0)} dense vectors ({report.get('embedded', 0)} embedded now); "
               f"{report.get('sources_parsed', 0)} sources parsed, {report.get('sources_reused', 0)} unchanged; "
               f"mode {report.get('mode', '?')}; {report.get('seconds', 0)} s; in {report.get('index_dir', '')}")
    if report.get("notes"):
        summary += "\n" + "\n".join(f"note: {n}" for n in report["notes"])
    return IndexReport(**{k: v for k, v in report.items() if k in IndexReport.model_fields}, summary=summary)


def warm_index_in_background() -> threading.Thread:
    """Build or refresh the index in a low-priority background thread (serve calls it at start), so a
    search that arrives meanwhile waits on the build (answering 'running' after max_wait_s) instead
    of starting one."""

    def build() -> None:
        import os

        try:  # Linux: the niceness of this thread and of the threads it starts
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        try:
            _, report = _get_index(Progress())  # its steps go to the log on stderr
            if report:
                log.info("documentation index ready: %s chunks in %s s", report.get("chunks"), report.get("seconds"))
        except Exception:  # a search will report the problem; the server keeps serving
            log.exception("building the documentation index failed")

    thread = threading.Thread(target=build, name="docs-index-warmup", daemon=True)
    thread.start()
    return thread
