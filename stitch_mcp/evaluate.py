"""`stitch-mcp eval PROBLEMS_DIR CANDIDATES_DIR --out results.jsonl`: many candidates, one summary.

A candidate matches a problem by file name: `CANDIDATES_DIR/NAME.py`, or any `.py` file in
`CANDIDATES_DIR/NAME/`, for the problem `PROBLEMS_DIR/NAME.py`. Checks run several at a time, so
builds overlap; each check's GPU stage holds its GPU alone (see devices.py), so timings never
overlap. On a GPU host the checks start with the heaviest on GPU memory beside the lightest
(stitch_mcp.memory_order). Rows already in the results file (same problem and candidate source) are
skipped, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from stitch_mcp.errors import UserError
from stitch_mcp.store import content_id

log = logging.getLogger(__name__)

FAST_P = (0.0, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class Pair:
    problem: str
    reference: Path
    candidate: Path

    @property
    def key(self) -> str:
        return content_id("r", self.problem, self.candidate.read_text(encoding="utf-8", errors="replace"))


def match(problems_dir: Path, candidates_dir: Path) -> tuple[list[Pair], list[str]]:
    """Pairs of (problem, candidate), and the candidate names that match no problem."""
    for d, what in ((problems_dir, "PROBLEMS_DIR"), (candidates_dir, "CANDIDATES_DIR")):
        if not d.is_dir():
            raise UserError(f"{what}: {d} is not a folder")
    problems = {p.stem: p for p in sorted(problems_dir.glob("*.py"))}
    if not problems:
        raise UserError(f"PROBLEMS_DIR: {problems_dir} holds no .py problems")
    pairs, unmatched = [], []
    for entry in sorted(candidates_dir.iterdir()):
        if entry.is_dir():
            name, files = entry.name, sorted(entry.glob("*.py"))
        elif entry.suffix == ".py":
            name, files = entry.stem, [entry]
        else:
            continue
        if name not in problems:
            unmatched.append(entry.name)
            continue
        pairs.extend(Pair(name, problems[name], f) for f in files)
    return pairs, unmatched


def _row(pair: Pair, report) -> dict:
    return {"key": pair.key, "problem": pair.problem, "candidate": str(pair.candidate),
            "verdict": report.verdict, "speedup_vs_eager": report.speedup_vs_eager,
            "speedup_vs_compile": report.speedup_vs_compile, "reasons": report.reasons[:5],
            "task_id": report.task_id, "candidate_id": report.candidate_id,
            "seconds": report.stage_seconds.get("total", 0.0),  # the parts overlap and nest: not summed
            "finished_at": round(time.time(), 3),
            "stage_seconds": report.stage_seconds}


def fast_p(rows: list[dict], field: str) -> dict[float, float]:
    """KernelBench's fast_p over problems: share that are correct and more than p times faster
    (best candidate of each problem)."""
    best: dict[str, float] = {}
    for row in rows:
        ok = row["verdict"] == "pass"
        speed = (row.get(field) or 0.0) if ok else -1.0
        best[row["problem"]] = max(best.get(row["problem"], -1.0), speed)
    n = len(best) or 1
    return {p: sum(1 for s in best.values() if s >= 0 and (s > p if p > 0 else True)) / n for p in FAST_P}


def _start_order(todo: list[Pair]) -> list[Pair]:
    """On a GPU host, the checks heaviest on GPU memory beside the lightest (stitch_mcp.memory_order);
    elsewhere, and where the estimate fails, name order."""
    from stitch_mcp.cuda_tools import nvidia_devices
    from stitch_mcp.memory_order import heaviest_beside_lightest, memory_needs

    if len(todo) < 3 or not nvidia_devices():
        return todo
    needs = memory_needs(sorted({p.reference for p in todo}))
    if not any(n is not None for n in needs.values()):
        if needs:
            log.warning("eval: no reference's GPU memory could be estimated; checks start in name order")
        return todo
    return heaviest_beside_lightest(todo, lambda p: needs.get(str(p.reference)))


def evaluate(problems_dir: Path, candidates_dir: Path, out: Path, jobs: int = 2,
             on_row=None) -> tuple[list[dict], list[str]]:
    """Check every matched candidate (resuming from `out`); returns all rows and the unmatched names."""
    from stitch_mcp.check import compile_and_check
    from stitch_mcp.worker import start_spares_ahead

    pairs, unmatched = match(Path(problems_dir), Path(candidates_dir))
    if unmatched and not pairs:
        raise UserError(f"no candidate matches a problem; unmatched: {', '.join(unmatched[:10])} "
                        f"(name a candidate NAME.py or put it in NAME/ for problem NAME.py)")
    out = Path(out)
    done: dict[str, dict] = {}
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[row["key"]] = row
            except (ValueError, KeyError):
                continue
    done = {key: row for key, row in done.items() if not row.get("internal")}  # checked again
    todo = [p for p in pairs if p.key not in done]
    if todo:
        start_spares_ahead()  # their imports overlap the memory estimate (_start_order)
    todo = _start_order(todo)
    lock = threading.Lock()
    rows = [done[p.key] for p in pairs if p.key in done]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as sink, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(compile_and_check, reference=str(p.reference), candidate=str(p.candidate)): p
                   for p in todo}
        for fut in as_completed(futures):
            pair = futures[fut]
            try:
                row = _row(pair, fut.result())
            except Exception as exc:  # one check's failure is its row's, never the whole evaluation's
                if not isinstance(exc, UserError):
                    log.exception("checking %s failed", pair.key)
                row = {"key": pair.key, "problem": pair.problem, "candidate": str(pair.candidate),
                       "verdict": "error", "speedup_vs_eager": None, "speedup_vs_compile": None,
                       "reasons": [str(exc) if isinstance(exc, UserError) else
                                   f"internal error: {type(exc).__name__}: {exc}"],
                       "finished_at": round(time.time(), 3)}
                if not isinstance(exc, UserError):
                    row["internal"] = True  # ours, not the candidate's: a resumed evaluation checks it again
            with lock:
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                rows.append(row)
            if on_row:
                on_row(row, len(rows), len(pairs))
    return rows, unmatched


def summary_table(rows: list[dict]) -> str:
    lines = ["fast_p (share of problems correct and faster than p x)",
             f"{'p':>5} {'vs eager':>10} {'vs compile':>11}"]
    eager, comp = fast_p(rows, "speedup_vs_eager"), fast_p(rows, "speedup_vs_compile")
    for p in FAST_P:
        lines.append(f"{p:>5g} {eager[p]:>10.2f} {comp[p]:>11.2f}")
    n_ok = sum(1 for r in rows if r["verdict"] == "pass")
    lines.append(f"{n_ok}/{len(rows)} candidates pass, over {len({r['problem'] for r in rows})} problems")
    return "\n".join(lines)
