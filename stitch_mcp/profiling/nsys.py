"""Nsight Systems back end: run `nsys profile` on the driver, export SQLite, parse it into a Trace.

Tables read (Nsight Systems export schema; created lazily, so any may be missing):
  StringIds(id, value)
  NVTX_EVENTS(start, end, eventType, text, textId, globalTid, ...)        ranges: eventType 59 (push/pop)
                                                                          and 60 (start/end)
  CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId, ...)
  CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, demangledName, shortName,
                             gridX..Z, blockX..Z, ...)
  CUPTI_ACTIVITY_KIND_MEMCPY(start, end, correlationId, bytes, copyKind, ...)
  CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, bytes, ...)
  ENUM_CUDA_MEMCPY_OPER(id, name, label)                                  copyKind names
  TARGET_INFO_GPU(id, name, ...)                                          device name
Kernels are tied to the host launch call by correlationId, and the launch to the outermost
PyTorch op range (emit_nvtx: "aten::conv2d, seq = 12, ...") open on its thread at that time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

from stitch_mcp.profiling.driver import ITER_PREFIX
from stitch_mcp.profiling.torchprof import LAUNCH_NAMES, _TopLevel
from stitch_mcp.profiling.trace import Copy, Kernel, Op, Trace

NVTX_RANGE_TYPES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange
_COPY_KINDS = {0: "unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
               8: "DtoD", 9: "HtoH", 10: "PtoP"}


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def parse_sqlite(path: str | Path) -> Trace:
    db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        return _parse(db)
    finally:
        db.close()


def _parse(db: sqlite3.Connection) -> Trace:
    tables = _tables(db)
    strings: dict[int, str] = {}
    if "StringIds" in tables:
        strings = {int(i): str(v) for i, v in db.execute("SELECT id, value FROM StringIds")}
    trace = Trace(backend="nsys", device=_device(db, tables), on_gpu=True)
    # -- NVTX ranges: iterations and ops
    ranges = _nvtx_ranges(db, tables, strings)
    trace.iterations = sorted((s, e) for s, e, name, _ in ranges if name.startswith(ITER_PREFIX))
    if not trace.iterations:
        trace.notes.append("no stitch_iter NVTX ranges in the report; using the whole capture as one iteration")
    finder = _TopLevel(_take_top_ops(trace, ranges))
    # -- runtime calls, then what they launched
    runtime = _runtime_calls(db, tables, strings, trace)
    owner = partial(_owner, trace, runtime, finder)
    _read_kernels(db, tables, strings, trace, owner)
    _read_copies(db, tables, trace, owner)
    if not trace.iterations and (trace.kernels or trace.copies):
        lo = min([k.start for k in trace.kernels] + [c.start for c in trace.copies])
        hi = max([k.end for k in trace.kernels] + [c.end for c in trace.copies])
        trace.iterations = [(lo, hi)]
    return trace


def _device(db: sqlite3.Connection, tables: set[str]) -> str:
    if "TARGET_INFO_GPU" in tables and "name" in _columns(db, "TARGET_INFO_GPU"):
        row = db.execute("SELECT name FROM TARGET_INFO_GPU LIMIT 1").fetchone()
        return row[0] if row else ""
    return ""


def _nvtx_ranges(db: sqlite3.Connection, tables: set[str],
                 strings: dict[int, str]) -> list[tuple[float, float, str, int]]:
    """(start, end, text, thread) of every closed NVTX range."""
    ranges: list[tuple[float, float, str, int]] = []
    if "NVTX_EVENTS" not in tables:
        return ranges
    cols = _columns(db, "NVTX_EVENTS")
    text_id = "textId" if "textId" in cols else "NULL"
    tid = "globalTid" if "globalTid" in cols else "0"
    etype = "eventType" if "eventType" in cols else "59"
    for start, end, text, tid_v, ty, tx_id in db.execute(
            f"SELECT start, end, text, {tid}, {etype}, {text_id} FROM NVTX_EVENTS"):
        if ty not in NVTX_RANGE_TYPES or end is None or end < start:
            continue
        name = text if text is not None else strings.get(tx_id, "")
        ranges.append((float(start), float(end), str(name or ""), int(tid_v or 0)))
    return ranges


def _take_top_ops(trace: Trace, ranges: list[tuple[float, float, str, int]]) -> list[tuple[int, Op]]:
    """Add to the trace the outermost op range per thread inside an iteration; returns them with their thread."""
    op_ranges = sorted(((s, -e, name, t) for s, e, name, t in ranges if not name.startswith(ITER_PREFIX)),
                       key=lambda r: (r[3], r[0], r[1]))
    top_ops: list[tuple[int, Op]] = []
    last_end: dict[int, float] = {}
    for s, neg_e, name, t in op_ranges:
        e = -neg_e
        if s < last_end.get(t, -1.0):
            continue  # nested inside an op already taken
        it = trace.iteration_of(s) if trace.iterations else 0
        if it < 0:
            continue
        op = Op(name=name, start=s, end=e, iteration=it)
        trace.ops.append(op)
        top_ops.append((t, op))
        last_end[t] = e
    return top_ops


def _runtime_calls(db: sqlite3.Connection, tables: set[str], strings: dict[int, str],
                   trace: Trace) -> dict[int, tuple[float, int]]:
    """correlationId -> (start, thread) of each runtime call; counts the launch calls inside iterations."""
    runtime: dict[int, tuple[float, int]] = {}
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:
        return runtime
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME")
    tid = "globalTid" if "globalTid" in cols else "0"
    name_id = "nameId" if "nameId" in cols else "NULL"
    for start, corr, t, nid in db.execute(
            f"SELECT start, correlationId, {tid}, {name_id} FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        runtime[int(corr)] = (float(start), int(t or 0))
        name = strings.get(nid, "") if nid is not None else ""
        if any(k in name for k in LAUNCH_NAMES) and (not trace.iterations or trace.iteration_of(start) >= 0):
            trace.launches += 1
    return runtime


def _owner(trace: Trace, runtime: dict[int, tuple[float, int]], finder: _TopLevel, corr: int | None,
           gpu_start: float) -> tuple[str, int]:
    """The op (name, iteration) whose host call launched the GPU work with this correlationId."""
    host = runtime.get(int(corr)) if corr is not None else None
    if host is None:
        return "", (trace.iteration_of(gpu_start) if trace.iterations else 0)
    op = finder.at(host[1], host[0])
    it = op.iteration if op else (trace.iteration_of(host[0]) if trace.iterations else 0)
    return (op.name if op else ""), it


_Owner = Callable[[int | None, float], tuple[str, int]]


def _read_kernels(db: sqlite3.Connection, tables: set[str], strings: dict[int, str], trace: Trace,
                  owner: _Owner) -> None:
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        return
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    name_col = next((c for c in ("demangledName", "shortName", "name", "mangledName") if c in cols), None)
    dims = [c if c in cols else "1" for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")]
    stream = "streamId" if "streamId" in cols else "0"
    corr = "correlationId" if "correlationId" in cols else "NULL"
    for row in db.execute(f"SELECT start, end, {name_col or 'NULL'}, {corr}, {stream}, {', '.join(dims)} "
                          "FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start"):
        start, end, nid, c, st, gx, gy, gz, bx, by, bz = row
        name = strings.get(nid, str(nid)) if isinstance(nid, int) else str(nid or "?")
        op, it = owner(c, start)
        if it < 0:
            continue
        trace.kernels.append(Kernel(name=name, start=float(start), end=float(end), op=op, iteration=it,
                                    grid=f"({gx},{gy},{gz})", block=f"({bx},{by},{bz})", stream=int(st or 0)))


def _read_copies(db: sqlite3.Connection, tables: set[str], trace: Trace, owner: _Owner) -> None:
    """Memcpys (their kind named by ENUM_CUDA_MEMCPY_OPER when there is one) and memsets."""
    copy_names = {}
    if "ENUM_CUDA_MEMCPY_OPER" in tables:
        cols = _columns(db, "ENUM_CUDA_MEMCPY_OPER")
        label = "label" if "label" in cols else "name"
        copy_names = {int(i): str(v) for i, v in db.execute(f"SELECT id, {label} FROM ENUM_CUDA_MEMCPY_OPER")}
    for table, is_set in (("CUPTI_ACTIVITY_KIND_MEMCPY", False), ("CUPTI_ACTIVITY_KIND_MEMSET", True)):
        if table not in tables:
            continue
        cols = _columns(db, table)
        kind_col = "copyKind" if ("copyKind" in cols and not is_set) else "NULL"
        corr = "correlationId" if "correlationId" in cols else "NULL"
        for start, end, nbytes, c, kind in db.execute(f"SELECT start, end, bytes, {corr}, {kind_col} FROM {table}"):
            op, it = owner(c, start)
            if it < 0:
                continue
            if is_set:
                k = "memset"
            else:
                k = _short_copy(copy_names.get(kind, _COPY_KINDS.get(kind, "memcpy")))
            trace.copies.append(Copy(kind=k, start=float(start), end=float(end), nbytes=int(nbytes or 0), op=op,
                                     iteration=it))


def _short_copy(label: str) -> str:
    low = label.lower().replace(" ", "").replace("-", "")
    for full, short in (("hosttodevice", "HtoD"), ("devicetohost", "DtoH"), ("devicetodevice", "DtoD"),
                        ("hosttohost", "HtoH"), ("peertopeer", "PtoP")):
        if full in low:
            return short
    return label if len(label) <= 8 else "memcpy"
