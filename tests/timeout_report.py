"""How close each test comes to its timeout, and each wait inside a test to its limit.

A pytest plugin (its hooks are imported into conftest.py), off unless asked for:

    pytest -m "not slow" --timeout-report=timeouts.json     # or STITCH_TIMEOUT_REPORT=timeouts.json

writes `timeouts.json` (every test: seconds from setup to teardown, the pytest-timeout that applied
and their ratio; every recorded wait: its limit, the seconds it took and their ratio) and
`timeouts.md` beside it (the slowest tests and everything past half of its limit), and prints the
tests and waits past half in the terminal summary. The ratio a test is held to is
`--timeout-report-fraction` (0.5: no test within half of its timeout).

The waits recorded are those a test makes itself, found by the caller's file being under tests/:
`subprocess.run(timeout=)`, `Popen.wait(timeout=)`, `Popen.communicate(timeout=)`,
`queue.Queue.get(timeout=)` (and multiprocessing's), `threading.Event.wait(timeout)`,
`Thread.join(timeout)`, `Process.join(timeout)` and `anyio.fail_after(...)`; a deadline loop
records itself through `record_wait` (faultkit's helpers do), a no-op while no report is asked for.
A wait that used its whole limit counts as expired: a test expecting that, or a failure.
Under pytest-xdist each worker writes its part beside PATH and the controller merges them.
"""

from __future__ import annotations

import functools
import json
import multiprocessing.process
import multiprocessing.queues
import os
import queue
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
_ENV = "STITCH_TIMEOUT_REPORT"


class _State:
    enabled = False
    current: str | None = None  # the test running now
    waits: list[dict] = []


def record_wait(what: str, limit_s: float | None, used_s: float, *, expired: bool = False,
                where: str | None = None) -> None:
    """Note that the running test waited `used_s` of a `limit_s` limit on `what` (expired: the
    limit was reached, on purpose or not). A no-op unless a timeout report was asked for."""
    if not _State.enabled or not limit_s:
        return
    if where is None:
        where = _caller(2)
    expired = expired or used_s >= float(limit_s)
    _State.waits.append({"test": _State.current, "what": what, "where": where, "limit_s": float(limit_s),
                         "used_s": round(used_s, 3), "ratio": round(used_s / float(limit_s), 3),
                         "expired": expired})


@contextmanager
def timed_wait(what: str, limit_s: float | None):
    """Record the time the block took against `limit_s`."""
    where = _caller(3)
    t0 = time.monotonic()
    expired = False
    try:
        yield
    except (TimeoutError, subprocess.TimeoutExpired):
        expired = True
        raise
    finally:
        record_wait(what, limit_s, time.monotonic() - t0, expired=expired, where=where)


def _caller(depth: int) -> str:
    f = sys._getframe(depth)
    return f"{Path(f.f_code.co_filename).name}:{f.f_lineno}"


def _from_tests(depth: int = 2) -> str | None:
    """file:line of the caller `depth` frames up when that file is one of the tests', else None."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    name = f.f_code.co_filename
    if name.startswith(str(TESTS)) and not name.endswith("timeout_report.py"):
        return f"{Path(name).name}:{f.f_lineno}"
    return None


# ------------------------------------------------------------------ the waits tests make themselves


def _wrap_timeout_call(owner, attr: str, what: str, timeout_arg: int):
    """Wrap owner.attr so a call from a test with a timeout (keyword or positional `timeout_arg`,
    counting self) records its duration against that timeout."""
    original = getattr(owner, attr)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        where = _from_tests()
        limit = kwargs.get("timeout", args[timeout_arg] if len(args) > timeout_arg else None)
        if where is None or not limit:
            return original(*args, **kwargs)
        t0 = time.monotonic()
        expired = False
        try:
            out = original(*args, **kwargs)
            if out is False and owner is threading.Event:
                expired = True
            return out
        except (subprocess.TimeoutExpired, queue.Empty):
            expired = True
            raise
        finally:
            record_wait(what, limit, time.monotonic() - t0, expired=expired, where=where)

    setattr(owner, attr, wrapper)
    return lambda: setattr(owner, attr, original)


def _wrap_fail_after():
    import anyio

    original = anyio.fail_after

    @functools.wraps(original)
    def fail_after(delay, *args, **kwargs):
        where = _from_tests()
        if where is None or delay is None:
            return original(delay, *args, **kwargs)
        return _recorded_scope(original(delay, *args, **kwargs), delay, where)

    anyio.fail_after = fail_after
    return lambda: setattr(anyio, "fail_after", original)


@contextmanager
def _recorded_scope(scope, delay: float, where: str):
    t0 = time.monotonic()
    expired = False
    try:
        with scope as s:
            yield s
    except TimeoutError:
        expired = True
        raise
    finally:
        record_wait("anyio.fail_after", delay, time.monotonic() - t0, expired=expired, where=where)


def _wrap_stages() -> list:
    """The product's own stage limits, wherever the call comes from in this process: a worker's
    stage against its timeout_s (run_timeout_s for a check's run stage) and a build against
    build_timeout_s. (Servers the tests start are other processes: faultkit.call_until_done
    records the stage seconds their reports give.)"""
    from stitch_mcp import build_room, worker

    run_worker, build = worker.run_worker, build_room._build

    @functools.wraps(run_worker)
    def recorded_run_worker(stage, spec, *, timeout_s, **kw):
        res = run_worker(stage, spec, timeout_s=timeout_s, **kw)
        # the selftest's device wait is off the clock, as a check's wait for its device is
        counted = res.seconds - (spec.get("wait_s", 0) if spec.get("action") == "wait_then_hang" else 0)
        record_wait(f"worker stage {stage} (timeout_s)", timeout_s, counted, expired=res.status == "timeout",
                    where="stitch_mcp.worker.run_worker")
        return res

    @functools.wraps(build)
    def recorded_build(candidate_source, scope, settings, **kw):
        res = build(candidate_source, scope, settings, **kw)
        record_wait("build (build_timeout_s)", settings.build_timeout_s, res.seconds,
                    expired=res.status == "timeout", where="stitch_mcp.build_room._build")
        return res

    worker.run_worker, build_room._build = recorded_run_worker, recorded_build

    def undo():
        worker.run_worker, build_room._build = run_worker, build
    return [undo]


def _install_wrappers() -> list:
    return _wrap_stages() + [
        _wrap_timeout_call(subprocess, "run", "subprocess.run", 10**6),  # keyword only
        _wrap_timeout_call(subprocess.Popen, "wait", "Popen.wait", 1),
        _wrap_timeout_call(subprocess.Popen, "communicate", "Popen.communicate", 2),
        _wrap_timeout_call(queue.Queue, "get", "Queue.get", 2),
        _wrap_timeout_call(multiprocessing.queues.Queue, "get", "multiprocessing Queue.get", 2),
        _wrap_timeout_call(threading.Event, "wait", "Event.wait", 1),
        _wrap_timeout_call(threading.Thread, "join", "Thread.join", 1),
        _wrap_timeout_call(multiprocessing.process.BaseProcess, "join", "Process.join", 1),
        _wrap_fail_after(),
    ]


# ------------------------------------------------------------------ pytest hooks


def pytest_addoption(parser):
    group = parser.getgroup("timeout-report", "how close tests come to their timeouts")
    group.addoption("--timeout-report", metavar="PATH", default=None,
                    help=f"write each test's duration against its timeout to PATH (JSON) and a "
                         f"markdown summary beside it (also ${_ENV})")
    group.addoption("--timeout-report-fraction", type=float, default=0.5,
                    help="list tests and waits past this fraction of their limit (default 0.5)")


def _report_path(config) -> Path | None:
    value = config.getoption("--timeout-report") or os.environ.get(_ENV)
    return Path(value) if value else None


def pytest_configure(config):
    if _report_path(config) is None:
        return
    _State.enabled = True
    _State.waits = []
    if not hasattr(config, "workerinput"):  # an aborted run's parts are not this run's
        path = _report_path(config)
        for stale in _parts(path):
            stale.unlink()
    config._timeout_report = {"tests": {}, "undo": _install_wrappers(), "t0": time.monotonic()}


def _effective_timeout(item) -> float | None:
    """The pytest-timeout limit for this item: its marker, else --timeout / PYTEST_TIMEOUT / the ini."""
    try:
        from pytest_timeout import _get_item_settings

        return _get_item_settings(item).timeout
    except Exception:  # a pytest-timeout without that helper, or none
        marker = item.get_closest_marker("timeout")
        if marker is not None and marker.args:
            return float(marker.args[0])
        try:
            value = item.config.getoption("timeout", None) or item.config.getini("timeout")
        except ValueError:
            return None
        return float(value) if value else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    state = getattr(item.config, "_timeout_report", None)
    if state is None:
        yield
        return
    _State.current = item.nodeid
    t0 = time.monotonic()
    yield
    seconds = time.monotonic() - t0
    _State.current = None
    timeout = _effective_timeout(item)
    row = state["tests"].setdefault(item.nodeid, {})
    row.update(test=item.nodeid, seconds=round(seconds, 3), timeout_s=timeout,
               ratio=round(seconds / timeout, 3) if timeout else None,
               slow="slow" in item.keywords)


def pytest_runtest_logreport(report):
    if not _State.enabled or _Session.config is None:
        return
    row = _Session.tests().setdefault(report.nodeid, {})
    row.setdefault("phases", {})[report.when] = round(report.duration, 3)
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        row["outcome"] = report.outcome
    elif report.when == "teardown" and report.outcome == "failed":
        row["outcome"] = "error"


class _Session:
    config = None

    @classmethod
    def tests(cls) -> dict:
        return cls.config._timeout_report["tests"]


def pytest_sessionstart(session):
    _Session.config = session.config


def _summarise(state: dict, fraction: float) -> dict:
    tests = sorted(state["tests"].values(), key=lambda r: -r.get("seconds", 0))
    ran = [t for t in tests if t.get("outcome") != "skipped" and "seconds" in t]
    return {
        "fraction": fraction,
        "wall_s": round(time.monotonic() - state["t0"], 1),
        "tests_run": len(ran),
        "no_timeout": [t["test"] for t in ran if not t.get("timeout_s")],
        "over_fraction": [t for t in ran if t.get("ratio") is not None and t["ratio"] > fraction],
        "waits_over_fraction": [w for w in _State.waits if w["ratio"] > fraction and not w["expired"]],
        "waits_expired": [w for w in _State.waits if w["expired"]],
        "tests": tests,
        "waits": sorted(_State.waits, key=lambda w: -w["ratio"]),
    }


def _markdown(s: dict, top: int = 15) -> str:
    pct = f"{s['fraction']:.0%}"
    ran = [t for t in s["tests"] if t.get("outcome") != "skipped" and "seconds" in t]
    lines = ["# Timeout report", "",
             f"{s['tests_run']} tests ran in {s['wall_s']} s (sum of tests {sum(t['seconds'] for t in ran):.0f} s); "
             f"{len(s['over_fraction'])} past {pct} of their timeout, "
             f"{len(s['waits_over_fraction'])} waits past {pct} of their limit.", "",
             f"## The {top} slowest tests", "", "| test | seconds | timeout (s) | ratio | outcome |",
             "|---|---:|---:|---:|---|"]
    for t in ran[:top]:
        lines.append(f"| `{t['test']}` | {t['seconds']:.1f} | {t.get('timeout_s') or '-'} | "
                     f"{t['ratio'] if t.get('ratio') is not None else '-'} | {t.get('outcome', '?')} |")
    lines += ["", f"## Tests past {pct} of their timeout", ""]
    lines += [f"- `{t['test']}`: {t['seconds']:.1f} s of {t['timeout_s']} s ({t['ratio']:.0%})"
              for t in s["over_fraction"]] or ["none"]
    lines += ["", f"## Waits inside tests past {pct} of their limit", ""]
    lines += [f"- `{w['test']}` {w['what']} at {w['where']}: {w['used_s']:.1f} s of {w['limit_s']:g} s"
              f" ({w['ratio']:.0%})" for w in s["waits_over_fraction"]] or ["none"]
    lines += ["", "## The 15 waits closest to their limit (not expired)", "",
              "| test | wait | where | seconds | limit (s) | ratio |", "|---|---|---|---:|---:|---:|"]
    for w in [w for w in s["waits"] if not w["expired"]][:15]:
        lines.append(f"| `{w['test']}` | {w['what']} | {w['where']} | {w['used_s']:.1f} | {w['limit_s']:g} | "
                     f"{w['ratio']} |")
    lines += ["", "## Waits that reached their limit (a test expecting it, or a failure)", ""]
    lines += [f"- `{w['test']}` {w['what']} at {w['where']}: limit {w['limit_s']:g} s"
              for w in s["waits_expired"]] or ["none"]
    return "\n".join(lines) + "\n"


def _part_path(path: Path, worker: str) -> Path:
    return path.with_name(f"{path.name}.{worker}.part")


def _parts(path: Path) -> list[Path]:
    """The workers' parts beside the report (pytest-xdist names its workers gw0, gw1, ...)."""
    return sorted(path.parent.glob(_part_path(path, "gw*").name))


def pytest_sessionfinish(session):
    """In a pytest-xdist worker: its tests' seconds and its waits, for the controller to merge (the
    controller itself only sees each test's phases and outcome)."""
    state = getattr(session.config, "_timeout_report", None)
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    if state is None or worker is None:
        return
    for undo in state["undo"]:
        undo()
    state["undo"] = []
    path = _report_path(session.config)
    path.parent.mkdir(parents=True, exist_ok=True)
    _part_path(path, worker).write_text(json.dumps({"tests": state["tests"], "waits": _State.waits}))


def _merge_parts(state: dict, path: Path) -> None:
    for part in _parts(path):
        data = json.loads(part.read_text())
        for nodeid, row in data["tests"].items():
            state["tests"].setdefault(nodeid, {}).update({k: v for k, v in row.items() if k != "phases"})
        _State.waits.extend(data["waits"])
        part.unlink()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = getattr(config, "_timeout_report", None)
    if state is None or hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller reports
        return
    for undo in state["undo"]:
        undo()
    path = _report_path(config)
    _merge_parts(state, path)
    s = _summarise(state, config.getoption("--timeout-report-fraction"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(s, indent=1))
    md = path.with_suffix(".md")
    md.write_text(_markdown(s))
    tr = terminalreporter
    tr.section("timeout report")
    pct = f"{s['fraction']:.0%}"
    for t in s["over_fraction"]:
        tr.write_line(f"PAST {pct}: {t['test']} {t['seconds']:.1f} s of {t['timeout_s']} s")
    for w in s["waits_over_fraction"]:
        tr.write_line(f"WAIT PAST {pct}: {w['test']} {w['what']} at {w['where']} "
                      f"{w['used_s']:.1f} s of {w['limit_s']:g} s")
    if s["no_timeout"]:
        tr.write_line(f"{len(s['no_timeout'])} tests ran without a timeout")
    tr.write_line(f"{s['tests_run']} tests, {len(s['over_fraction'])} past {pct} of their timeout, "
                  f"{len(s['waits_over_fraction'])} waits past {pct} of their limit: {path} and {md}")
