"""Read an .ncu-rep through Nsight Compute's own Python interface (`ncu_report`) and write JSON.

Run in a child process (the module is a native extension shipped with Nsight Compute; a crash in
it must not take the server down):

    PYTHONPATH=<nsight-compute>/extras/python python -m stitch_mcp.profiling.ncu_dump REPORT OUT.json

Output: {"launches": [{"id", "name", "metrics": {name: [value, unit]}, "source": [...]}]}. With
SourceCounters, "source" holds per source line: file, line, samples and stall-reason counts.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any

STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def _value(ncu_report: Any, metric: Any) -> Any:
    try:
        kind = metric.kind()
        if kind == ncu_report.IMetric.ValueKind_STRING:
            return metric.as_string()
    except Exception:
        pass
    for getter in ("as_double", "as_uint64", "as_string"):
        try:
            return getattr(metric, getter)()
        except Exception:
            continue
    return None


def _unit(metric: Any) -> str:
    try:
        return str(metric.unit() or "")
    except Exception:
        return ""


def _source_lines(action: Any) -> list[dict[str, Any]]:
    names = [n for n in action.metric_names() if n.startswith(STALL_PREFIX) and not n.endswith("_not_issued")]
    names.append("smsp__pcsamp_sample_count")
    per_line: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    sass: dict[tuple[str, int], str] = {}
    for name in names:
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_correlation_ids() or metric.num_instances() == 0:
            continue
        ids = metric.correlation_ids()
        reason = "samples" if name == "smsp__pcsamp_sample_count" else name[len(STALL_PREFIX):]
        for i in range(metric.num_instances()):
            try:
                count = float(metric.as_uint64(i))
            except Exception:
                count = float(metric.as_double(i))
            if not count:
                continue
            pc = int(ids.as_uint64(i))
            info = action.source_info(pc)
            if info is not None and info.file_name() and int(info.line()) > 0:
                key = (str(info.file_name()), int(info.line()))
            else:
                key = ("<sass>", pc)
                if key not in sass:
                    try:
                        sass[key] = str(action.sass_by_pc(pc) or "")
                    except Exception:
                        sass[key] = ""
            per_line[key][reason] += count
    files: dict[str, str] = {}
    try:
        files = {str(k): str(v or "") for k, v in dict(action.source_files()).items()}
    except Exception:
        pass
    out = []
    for (fname, line), counts in per_line.items():
        text = sass.get((fname, line), "")
        if fname in files and files[fname]:
            lines = files[fname].splitlines()
            if 0 < line <= len(lines):
                text = lines[line - 1]
        elif fname != "<sass>":
            try:
                with open(fname, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
                text = lines[line - 1] if 0 < line <= len(lines) else ""
            except OSError:
                pass
        out.append({"file": fname, "line": line, "text": text.strip(), "counts": dict(counts)})
    out.sort(key=lambda r: -r["counts"].get("samples", sum(r["counts"].values())))
    return out[:50]


def _name(ncu_report: Any, action: Any) -> str:
    base = getattr(ncu_report.IAction, "NameBase_DEMANGLED", None)
    if base is not None:
        try:
            return str(action.name(base))
        except Exception:
            pass
    return str(action.name())


def dump(report: str) -> dict[str, Any]:
    import ncu_report  # type: ignore[import-not-found]

    ctx = ncu_report.load_report(report)
    launches = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            metrics: dict[str, list[Any]] = {}
            for name in action.metric_names():
                if name.startswith("breakdown:"):
                    continue
                m = action.metric_by_name(name)
                if m is None:
                    continue
                metrics[name] = [_value(ncu_report, m), _unit(m)]
            entry: dict[str, Any] = {"id": len(launches), "name": _name(ncu_report, action), "metrics": metrics}
            if any(n.startswith(STALL_PREFIX) for n in metrics):
                try:
                    entry["source"] = _source_lines(action)
                except Exception as exc:  # source correlation is optional
                    entry["source_error"] = f"{type(exc).__name__}: {exc}"
            launches.append(entry)
    return {"reader": "ncu_report", "launches": launches}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    report, out = argv[0], argv[1]
    data = dump(report)
    with open(out, "w") as fh:
        json.dump(data, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
