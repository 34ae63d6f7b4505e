"""The red team's suite (issue 14 item 4): candidates that attack the checker instead of the task.

Each program in tests/programs/attacks/ is one attack class. It is judged by the real
compile_and_check (real build and run workers, the real judge and candidate room, the real sandbox
this host allows), and then the test asserts what must hold whatever the attack did:

- the attack's verdict is `fail` or `error` with a named finding or error kind (timing attacks:
  the forged time is not the one reported);
- nothing it started is still running;
- the workspace (SQLite under STITCH_DATA_DIR) and the build cache hold what they held before,
  plus only the check's own records;
- nothing secret reached the report (the server's token, a file of the server's);
- the next honest candidate on the same task is judged exactly as in a clean run.

The attacks touch only their own ancestors (the judge, the worker, this test process) and the
folders those name, never anybody else's processes or files. A test marked
`xfail(strict=True, reason="HOLE: ...")` is an attack that still succeeds: the assertion says what
must hold once the hole is closed (and the mark must then go).

Stages: "room" runs the program as given (a Python-only candidate goes straight to the candidate
room); "build" adds a comment naming load_inline, which sends the same program through the build
stage first (check.compile_and_check: a source mentioning cpp_extension/load_inline with no cached
manifest is imported by the build worker).
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from stitch_mcp.check import candidate_scope, compile_and_check
from stitch_mcp.config import configure, get_settings

TESTS = Path(__file__).resolve().parent
PROGRAMS = TESTS / "programs"
ATTACKS = PROGRAMS / "attacks"
BUILD_MENTION = "\n# built with torch.utils.cpp_extension.load_inline\n"
SLEEP_MARKS = ("7345.123", "7346.5", "7347.5")  # the argv[1] of the attacks' daemons (sleep)
FILL_NAME = "stitch-attack-fill.bin"
FORGED_STDOUT = b"FORGED-BY-CANDIDATE"

# Closed on main (d28c18c, build_room.build_in_room): until then the build stage imported the candidate
# unsandboxed, with the server's whole environment, and every build-stage test below was a HOLE.


# ------------------------------------------------------------------ helpers


def attack_source(name: str, stage: str = "room", **fill: str) -> str:
    text = (ATTACKS / f"{name}.py").read_text()
    for key, value in fill.items():
        text = text.replace(f"@{key}@", value)
    return text + (BUILD_MENTION if stage == "build" else "")


def judge(candidate: str, ref: str = "ref_relu", **kw):
    kw.setdefault("timing", False)
    kw.setdefault("compare_compile", False)
    return compile_and_check(reference=str(PROGRAMS / f"{ref}.py"), candidate=candidate, **kw)


def codes(report) -> set[str]:
    return {f.code for f in report.integrity.findings}


def _sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


class Storage:
    """What the workspace database and the build cache hold, to compare before and after a check."""

    def __init__(self) -> None:
        s = get_settings()
        self.db, self.builds = Path(s.db_path).expanduser(), Path(s.build_dir).expanduser()
        self.rows = self._rows()
        self.files = self._files()

    def _rows(self) -> dict[str, set]:
        if not self.db.exists():
            return {}
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            out = {}
            for t in ("tasks", "candidates", "reports"):
                cur = con.execute(f"SELECT * FROM {t}")
                names = [d[0] for d in cur.description]
                out[t] = {tuple(zip(names, row)) for row in cur.fetchall()}
            return out
        finally:
            con.close()

    def _files(self) -> dict[str, str]:
        if not self.builds.exists():
            return {}
        return {str(p): _sha(p) for p in self.builds.rglob("*") if p.is_file()}

    def changes(self, report, source: str) -> list[str]:
        """What changed that is not the check's own record of `report`."""
        own_scope = str(candidate_scope(self.builds, source))
        problems = []
        rows = self._rows()
        for table, before in self.rows.items():
            missing = before - rows.get(table, set())
            if missing:
                problems.append(f"{table}: {len(missing)} stored row(s) changed or deleted")
        for row in rows.get("reports", set()) - self.rows.get("reports", set()):
            fields = dict(row)
            kind, task_id, candidate_id = fields["kind"], fields["task_id"], fields["candidate_id"]
            if candidate_id != report.candidate_id and not (kind == "baseline" and task_id == report.task_id):
                problems.append(f"reports: a new {kind!r} row for {candidate_id or task_id}")
            if kind == "baseline":
                problems.append("reports: a new baseline row (a check without timing stores none)")
        for path, digest in self.files.items():
            if not path.startswith(own_scope) and self._files_now().get(path) != digest:
                problems.append(f"cache: {path} changed")
        for path in set(self._files_now()) - set(self.files):
            if not path.startswith(own_scope):
                problems.append(f"cache: {path} appeared outside the candidate's own scope")
        return problems

    def _files_now(self) -> dict[str, str]:
        if not hasattr(self, "_now"):
            self._now = self._files()
        return self._now


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def attack_daemons(marks: tuple[str, ...] = SLEEP_MARKS) -> list[int]:
    """Live processes an attack started (they carry a recognisable command line); `marks`: only
    those of these attacks (with pytest-xdist, another worker's attack may be running)."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit()
            and any(_cmdline(p) == f"sleep {m}" for m in marks)]


def marks_in(source: str) -> tuple[str, ...]:
    """The daemon marks an attack's source uses."""
    return tuple(m for m in SLEEP_MARKS if m in source)


def kill_daemons(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def workers_left() -> list[int]:
    """Worker and room processes this test process started that are still alive (idle spares aside)."""
    from faultkit import comm, idle_spare_of

    from stitch_mcp.worker import _descendants

    spare_rooms: set[int] = set()
    try:  # rooms started ahead of need, waiting for a program: nothing of a candidate has run in them
        from stitch_mcp.judge_room import _spares

        for room in list(_spares):
            if room.proc.poll() is None:
                spare_rooms |= {room.proc.pid, *_descendants(room.proc.pid)}
    except ImportError:
        pass
    for pid in _descendants(os.getpid()):  # an idle spare worker's own two rooms wait with it
        if idle_spare_of(pid, {os.getpid()}) and comm(pid) != "stitch-zygote":  # not every worker forked
            spare_rooms |= set(_descendants(pid))
    left = []
    for pid in _descendants(os.getpid()):
        if idle_spare_of(pid, {os.getpid()}) or pid in spare_rooms:
            continue
        cmd = _cmdline(str(pid))
        if "stitch_mcp.worker" in cmd or "stitch_mcp.room" in cmd or "bwrap" in cmd:
            left.append(pid)
    return left


def settle(marks: tuple[str, ...], seconds: float = 10.0) -> tuple[list[int], list[int]]:
    """Wait (briefly) for what a check started to go (daemons with `marks`, this process's workers
    and rooms); return what did not (daemons, workers)."""
    end = time.monotonic() + seconds
    while True:
        daemons, workers = attack_daemons(marks), workers_left()
        if (not daemons and not workers) or time.monotonic() > end:
            return daemons, workers
        time.sleep(0.2)


def verdict_shape(report) -> dict:
    """What must not differ between two checks of the same honest candidate."""
    return {"verdict": report.verdict, "error_kind": report.error_kind, "findings": sorted(codes(report)),
            "trials": [(t.trial, t.ok, t.inputs, t.weights) for t in report.correctness.trials],
            "extensions": len(report.build.extensions)}


@pytest.fixture(scope="module")
def clean_honest():
    """The honest candidate judged before any attack ran: the reference for 'judged as in a clean run'."""
    return verdict_shape(judge((PROGRAMS / "cand_relu_torch.py").read_text()))


@pytest.fixture
def secrets_set(monkeypatch, tmp_path):
    """A server secret in the environment (the token of the HTTP transport) and a secret file in
    the data folder, neither of which a candidate may ever read."""
    token = f"tok-{uuid.uuid4().hex}"
    monkeypatch.setenv("STITCH_AUTH_TOKEN", token)
    data = Path(get_settings().data_dir).expanduser()
    data.mkdir(parents=True, exist_ok=True)
    secret_file = data / f"secret-{uuid.uuid4().hex[:8]}.txt"
    secret_text = f"STITCHSECRET{uuid.uuid4().hex}"
    secret_file.write_text(f"{secret_text} x;\n")
    yield {"token": token, "file": secret_file, "text": secret_text}
    secret_file.unlink(missing_ok=True)


@pytest.fixture
def short_run_timeout():
    old = get_settings().run_timeout_s
    configure(run_timeout_s=60)
    yield
    configure(run_timeout_s=None if old is None else old)


def assert_contained(report, source: str, before: Storage, clean_honest: dict) -> None:
    """The four properties every attack must leave intact (see the module docstring)."""
    daemons, workers = settle(marks_in(source))
    kill_daemons(daemons)
    assert not daemons, f"the attack's daemons outlived the check: {daemons}"
    assert not workers, f"processes left behind: {[_cmdline(str(p)) for p in workers]}"
    assert before.changes(report, source) == []
    assert verdict_shape(judge((PROGRAMS / "cand_relu_torch.py").read_text())) == clean_honest


def text_of(report) -> str:
    return report.model_dump_json()


# ------------------------------------------------------------------ the result channel and the harness


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["room", "build"])
def test_forged_result_then_exit(stage, clean_honest):
    """A made-up result line (and door frame) on every pipe/socket it can reach, then os._exit(0)."""
    source = attack_source("atk_fake_result_exit", stage)
    before = Storage()
    r = judge(source)
    assert r.verdict == "error", r.summary
    assert r.error_kind in ("os_exit", "protocol", "no_result"), (r.error_kind, r.reasons)
    assert_contained(r, source, before, clean_honest)


def test_patched_harness_objects(clean_honest):
    """compare's __code__, torch.allclose, Tensor dunders and clocks patched at import: the
    comparison happens in the judge, which never imports the candidate."""
    source = attack_source("atk_patch_harness")
    before = Storage()
    r = judge(source)
    assert r.verdict == "fail", r.summary
    assert not r.correctness.ok and any(not t.ok for t in r.correctness.trials)
    assert_contained(r, source, before, clean_honest)


def test_trial_inputs_made_ahead_of_the_check_are_never_the_trials():
    """A room right only on inputs it rebuilt at import, from trial seeds that checks once used for
    every candidate (the heavy-tailed trial's included, as the judge's `distribute` makes them),
    clamping everywhere else: every trial's seed is drawn for the check, so the heavy-tailed trial
    catches it (it passed every check while those seeds were fixed, red team 2026-11-27)."""
    r = judge(attack_source("atk_known_trial_inputs"), ref="ref_scale")
    assert r.verdict == "fail", r.summary
    failed = [t for t in r.correctness.trials if not t.ok]
    assert [t.inputs for t in failed] == ["heavy_tailed"], r.correctness.trials
    assert failed[0].seed != 42 + 1000 * failed[0].trial


# ------------------------------------------------------------------ storage, secrets, the server


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["room", "build"])
def test_tamper_workspace_and_cache(stage, clean_honest):
    """Rewrite stored verdicts, insert a forged baseline, overwrite cached builds of others."""
    # another candidate's build in the cache, for the attack to find
    judge((PROGRAMS / "cand_relu_cpp.py").read_text())
    source = attack_source("atk_tamper_storage", stage)
    before = Storage()
    r = judge(source)
    assert "TAMPERED" not in text_of(r), r.reasons
    assert r.verdict in ("fail", "error"), r.summary
    assert_contained(r, source, before, clean_honest)


@pytest.mark.parametrize("stage", [pytest.param("room", marks=pytest.mark.slow), "build"])
def test_read_server_secrets(stage, secrets_set, capfd, clean_honest):
    """The token in the server's environment, /proc/<ancestor>/{environ,cmdline,mem}, the server's
    stdout through /proc/<pid>/fd/1: nothing of the server may reach the report or the stream."""
    source = attack_source("atk_read_secrets", stage)
    before = Storage()
    r = judge(source)
    text = text_of(r)
    assert secrets_set["token"] not in text
    assert "found the judge's spec" not in text
    assert "wrote stdout" not in text
    assert "pytest" not in text and "stitch_mcp.worker" not in text, "the server's processes are visible"
    assert FORGED_STDOUT not in capfd.readouterr().out.encode()
    assert r.verdict in ("fail", "error"), r.summary
    assert_contained(r, source, before, clean_honest)


def _isolation_level() -> str:
    try:
        from stitch_mcp.sandbox import probe_isolation
    except ImportError:
        return "none"
    return probe_isolation().level


@pytest.mark.slow
@pytest.mark.skipif(_isolation_level() not in ("bubblewrap", "namespaces"), reason=(
    "without a pid namespace the room sees this test process among its ancestors and the attack would "
    "SIGKILL the test run itself (the sandbox documents that level as unprotected)"))
def test_signal_parent_and_server(short_run_timeout, clean_honest):
    """SIGSTOP of its parent and SIGKILL of every ancestor that is the service's (the judge, the
    worker, this test process standing in for the server): this process must survive it."""
    source = attack_source("atk_signal_everyone")
    before = Storage()
    r = judge(source)
    assert r.verdict in ("fail", "error"), r.summary
    assert_contained(r, source, before, clean_honest)


@pytest.mark.slow
def test_build_daemon_forges_the_run_result(clean_honest):
    """The issue's first attack, reached through the build stage: a wrong candidate must not pass."""
    source = attack_source("atk_build_daemon_forge", "build")
    before = Storage()
    try:
        r = judge(source, timing=True)
        assert r.verdict != "pass", f"a wrong candidate passed: {r.summary}"
        assert_contained(r, source, before, clean_honest)
    finally:
        _kill_forgers()


def _kill_forgers() -> None:
    """The forging daemon runs `python -c <program> SERVER BUILD` with an empty environment."""
    for p in os.listdir("/proc"):
        if p.isdigit() and "json, os, signal, sys, time" in _cmdline(p):
            kill_daemons([int(p)])


# ------------------------------------------------------------------ processes, disk, output, locks


@pytest.mark.slow
@pytest.mark.parametrize("program", ["atk_daemon", "atk_fork_bomb"])
def test_daemons_die_with_the_check(program, clean_honest):
    """A double-forked, re-parented daemon with an empty environment (and a bounded fork bomb of
    them): dead right after the check; the candidate, otherwise correct, is caught by it."""
    source = attack_source(program)
    before = Storage()
    marks = marks_in(source)
    try:
        r = judge(source)
        daemons = attack_daemons(marks)
        assert not daemons, f"{len(daemons)} daemon(s) outlived the check"
        assert r.verdict in ("fail", "error"), r.summary
        assert r.verdict == "error" or "background_processes" in codes(r), r.summary
        assert_contained(r, source, before, clean_honest)
    finally:
        kill_daemons(attack_daemons(marks))


@pytest.mark.slow
def test_daemon_from_the_build_stage(clean_honest):
    source = attack_source("atk_daemon", "build")
    try:
        judge(source)
        assert not attack_daemons(marks_in(source)), "a daemon started in the build worker outlived the check"
    finally:
        kill_daemons(attack_daemons(marks_in(source)))


@pytest.mark.slow
def test_fill_disk_leaves_nothing(clean_honest):
    source = attack_source("atk_fill_disk")
    before = Storage()
    places = [Path(p) / FILL_NAME for p in ("/tmp", "/dev/shm", "/var/tmp", os.path.expanduser("~"))]
    try:
        r = judge(source)
        left = [str(p) for p in places if p.exists()]
        assert not left, f"files the candidate wrote outlived the check: {left}"
        assert r.verdict == "fail", r.summary
        assert_contained(r, source, before, clean_honest)
    finally:
        for p in places:
            p.unlink(missing_ok=True)


@pytest.mark.slow
def test_output_flood(clean_honest):
    source = attack_source("atk_flood")
    before = Storage()
    r = judge(source)
    assert r.verdict == "error" and r.error_kind == "output_flood", (r.error_kind, r.reasons)
    assert len(text_of(r)) < 200_000
    assert_contained(r, source, before, clean_honest)


@pytest.mark.slow
def test_device_lock_held_by_a_daemon(clean_honest):
    """Taking the host-wide device lock and keeping it in a daemon: the next check still gets a device."""
    source = attack_source("atk_device_lock")
    try:
        r = judge(source)
        assert r.verdict in ("fail", "error"), r.summary
        assert not attack_daemons(marks_in(source)), "a daemon holding the device lock outlived the check"
        assert_contained(r, source, Storage(), clean_honest)
    finally:
        kill_daemons(attack_daemons(marks_in(source)))


# ------------------------------------------------------------------ timing


@pytest.mark.slow
@pytest.mark.parametrize("program", ["atk_forge_timer", "atk_forge_timer_zero", "atk_forge_timer_fraction"])
def test_forged_room_clock(program, clean_honest):
    """The room's clock patched (1 ns per read, or frozen) while forward does ~40 relus: either the
    room is ended (an error with a named kind) or the reported time is the judge's estimate, never
    the forged one: called false, or (on a CPU, a claim within CPU_BATCH_SLACK of the batches'
    speedup) raised to the batches' time."""
    source = attack_source(program)
    before = Storage()
    r = judge(source, timing=True)
    if r.verdict == "error":
        assert r.error_kind, r.reasons
    else:
        raised = r.timing.batch is not None and r.timing.batch.room_ms is not None
        assert "timing_contradicted" in codes(r) or raised, (r.integrity.findings, r.timing)
        assert r.timing.candidate is not None and r.timing.eager is not None
        assert r.timing.candidate.median_ms > 0.5 * r.timing.eager.median_ms, r.timing
        assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 2.0, r.speedup_vs_eager
    assert_contained(r, source, before, clean_honest)


def test_zero_room_time_is_replaced_by_the_judges_estimate():
    """The judge's bracket logic fed what a frozen room clock produces: every room time 0 ms while the
    judge's clock saw ~10 ms calls (the reference's room: 5 ms own time, 0.2 ms door overhead)."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Lane, Timed, judge_times

    n = 20
    ref = Lane(room_ms=[5.0] * n, wall_ms=[5.2] * n, after_ms=[1.0] * (n - 1), block_medians=[5.0] * 4)
    cand = Lane(room_ms=[0.0] * n, wall_ms=[10.2] * n, after_ms=[1.0] * (n - 1), block_medians=[0.0] * 4)
    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cpu"), Timed(reference=ref, candidate=cand))
    assert "timing_contradicted" in {f["code"] for f in res["findings"]}
    assert res["timing"]["candidate"]["median_ms"] >= 5.0, res["timing"]["candidate"]


def test_tiny_forged_room_time_is_replaced_by_the_judges_estimate():
    """The same with a room clock that advances 1 ns per read (room times ~1e-6 ms): caught."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Lane, Timed, judge_times

    n = 20
    ref = Lane(room_ms=[5.0] * n, wall_ms=[5.2] * n, after_ms=[1.0] * (n - 1), block_medians=[5.0] * 4)
    cand = Lane(room_ms=[1e-6] * n, wall_ms=[10.2] * n, after_ms=[1.0] * (n - 1), block_medians=[1e-6] * 4)
    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cpu"), Timed(reference=ref, candidate=cand))
    assert "timing_contradicted" in {f["code"] for f in res["findings"]}
    assert res["timing"]["candidate"]["median_ms"] >= 5.0, res["timing"]["candidate"]


@pytest.mark.slow
@pytest.mark.parametrize("program, finding", [("atk_batch_early", "timing_contradicted"),
                                              ("atk_batch_poller", "work_while_idle")])
def test_batches_run_before_the_judges_clock(program, finding, clean_honest):
    """A room rewired to run each batch when told its calls (before the clock started, 8c27082 and
    earlier: it passed at about 20x with no finding), or with a thread that works on each batch's
    inputs while the judge writes them, and its clock 50x slow: the calls are too short for the
    per-call bracket. The poller's batches measured up to 2.0x on this 2-core host (the same relu
    as the reference); its room used 2.1 s of CPU in the 3.3 s it was not asked anything, an
    honest room 0 ms (judge.timing.IDLE_CPU_SHARE)."""
    source = attack_source(program)
    before = Storage()
    r = judge(source, timing=True)
    assert finding in codes(r), (r.verdict, r.integrity.findings, r.timing)
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 2.0, r.timing
    assert_contained(r, source, before, clean_honest)


def test_on_the_cpu_clock_batches_carry_their_speedup_over():
    """A room whose single calls cost less than the reference's door and its outputs (a cheaper door
    of its own) is timed at eager's time over its speedup in batches, where the door cancels; so is
    one whose single calls (0.09 ms, eager's 0.07) show it slower than its batches do (their cold
    caches), but at no more than 1 + CPU_BATCH_LOWERS times the speedup of its single calls, in which
    no gain is credited within the door and harness (0.23 ms here): a room fusing calls across a
    batch, its single calls lean, got 1.7x with eager's own work."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import CPU_BATCH_LOWERS, Batches, judge_times

    for cand_cpu, batch_ms, timed_ms in ((0.235, 0.06, 0.07 * 0.06 / 0.06), (0.32, 0.072, 0.07 * 0.072 / 0.06),
                                         (0.27, 0.033, 0.07 / (1 + CPU_BATCH_LOWERS))):
        t = _cpu_clock_lanes(cand_cpu, 0.01, 0.005)
        t.cpu_batches = Batches(calls=64, candidate_ms=batch_ms, reference_ms=0.06, copy_ms=0.0)
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device="cpu"), t)
        assert res["timing"]["candidate"]["median_ms"] == pytest.approx(timed_ms, rel=1e-6), res["timing"]
        assert res["timing"]["batch"]["speedup"] == pytest.approx(0.06 / batch_ms)
        assert ("fuse calls" in res["timing"]["batch"]["note"]) == (batch_ms == 0.033), res["timing"]["batch"]
    from stitch_mcp.judge.timing import needs_cpu_batches

    assert needs_cpu_batches(_cpu_clock_lanes(0.27, 0.025, 0.02)) and not needs_cpu_batches(
        _short_lanes(0.0185, 0.40, 0.0089, 0.40)), "only on the CPU clock (a GPU's lanes have no CPU readings)"


@pytest.mark.parametrize("name, fill, most", [
    ("atk_lean_door", {}, 1.3), ("atk_lean_door", {"direct": "yes", "lean_batches": "yes"}, 1.1),
    ("atk_pad_small_batches", {"pad_ms": "0.5", "ck": "yes", "lean_calls": "yes"}, 1.1),
    ("atk_pad_small_batches", {"pad_ms": "0.1", "ck": "yes", "lean_calls": "yes"}, 1.1)])
def test_a_room_that_answers_its_door_more_cheaply_gains_nothing(name, fill, most):
    """A room that replaces its door loop at import (cached views, no parsing, a prebuilt reply) and
    does the reference's own work: on the CPU clock, with only the reference's door subtracted, its
    calls came out 1.8x faster (red-team, 2026-11-26); the batches, where the door's cost cancels,
    put it back at eager's speed. Filled with `direct` and `lean_batches` it also writes straight
    into the judge's output buffers, no forward call, no copy, in single calls and batches alike:
    its batches then cost less than the reference's and came out 1.2-1.8x (session 20), until no gain
    within what the harness costs per call was credited (judge.timing.skippable_harness_ms). Elsewhere
    (a GPU, or no cpusets) it is timed as before. atk_pad_small_batches adds streaming stores and
    padding of its smaller batches (1.24-1.80x until the whole harness and a batch's fixed cost were
    withheld). On the CPU clock its time is at most 1 + CPU_BATCH_LOWERS (1.1) times its single calls'
    speedup, where those are credited nothing within the door and harness: 1.1 is that cap, reached
    beside CI's build (2026-11-27) when the batches came out faster than that."""
    from stitch_mcp.judge.timing import CPU_BATCH_LOWERS

    r = judge(attack_source(name, **fill), timing=True)
    assert r.verdict == "pass", r.summary
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager <= most + 1e-6, (r.speedup_vs_eager, r.timing)
    if "CPU time" in r.timing.method:
        b = r.timing.batch
        assert b is not None, r.timing
        capped = f"no more than {1 + CPU_BATCH_LOWERS:.2g}x the speedup of its single calls" in b.note
        assert b.speedup < most or (capped and b.speedup < 1.24), b  # it got 1.24-1.80x in them before


@pytest.mark.parametrize("fill", [{"lean_calls": "yes", "fuse": "yes"}, {"lean_calls": "no", "fuse": "yes"}])
def test_a_room_fusing_calls_across_its_batches_gains_little(fill):
    """A room that does each batch as one forward over all its calls' inputs (it sees them all
    before it runs them), its single calls through a lean door: 1.68-1.75x with the reference's own
    work (red team, session 24). On the CPU clock the batches' speedup counts up to 1.1x the single
    calls', where no gain is credited within the reference's door and harness."""
    r = judge(attack_source("atk_fuse_batches", **fill), ref="ref_tanh_chain", timing=True)
    assert r.verdict == "pass", r.summary
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 1.2, (r.speedup_vs_eager, r.timing)


@pytest.mark.parametrize("fill", [{"spacing_us": "30", "own_ms": "0"}, {"spacing_us": "15", "own_ms": "60"}])
def test_a_room_that_storms_the_shared_core_with_interrupts_gains_nothing(fill):
    """A room that arms timers to expire while the reference's room runs on the shared core (their
    interrupts billed to the reference's cgroup) got 1.17-1.70x with eager's own relu (red-team,
    session 21). The judge counts the interrupts on its core while each room runs: where the
    reference's windows take far more than the candidate's, `interrupt_storm`, no speedup. Masked by
    timers of its own expiring while it sleeps in its batches, it got 1.2-1.5x in about half its
    checks, until such idle batches no longer counted. Since the batches run in an order drawn each
    round, its timers land on whichever batch follows its own, and its batches showed 1.0-1.15x in 14
    checks (2026-11-28): held, like any gain in batches, to 1 + CPU_BATCH_LOWERS of its single calls'
    speedup (which the storm leaves at eager's own), it came out at 1.0-1.053x, or at that bound."""
    from stitch_mcp.judge.timing import CPU_BATCH_LOWERS

    r = judge(attack_source("atk_interrupt_storm", **fill), timing=True)
    assert r.verdict == "pass", r.summary
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager <= 1 + CPU_BATCH_LOWERS + 1e-9, (
        r.speedup_vs_eager, r.timing, r.integrity.findings)


def test_interrupt_volleys_that_slip_under_the_count_gain_nothing():
    """Few interrupts, each carrying much work: timerfds entered thousands of times into epolls that
    nobody waits on, armed to expire while the reference's room runs (each expiry runs every epoll
    wake-up callback in the interrupt, billed to the reference's cgroup). Eager's calls beside it
    came out 1.35-1.5x slower while the reference's windows took 0.32-0.45 interrupts per ms against
    the candidate's 0.25-0.30, far under STORM_MARGIN: no `interrupt_storm` (red team, session 25).
    Eager timed alone, once the room has ended and its timers with it, takes that back; the
    candidate, doing eager's own matmul, keeps no more than CPU_ALONE_SLACK over it."""
    fill = {"tf": "6", "ne": "4", "nums": "1000", "from": "0.0", "to": "1.0", "period_us": "250",
            "single": "yes", "batch": "no", "fwd": "mm_tanh", "log": "no"}
    r = judge(attack_source("atk_irq_volley", **fill), ref="ref_mm_tanh", timing=True)
    assert r.verdict == "pass", r.summary
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 1.15, (r.speedup_vs_eager, r.timing)


@pytest.mark.parametrize("cand, ref, harness, fixed, speedup", [
    (0.040, 0.052, 0.045, 0.0, 1.0),  # a lean relu into the judge's buffer: within the harness
    (0.020, 0.052, 0.045, 0.32, 1.0),  # streaming stores and padded smaller batches: the batch's fixed cost too
    (0.100, 0.250, 0.045, 0.32, 0.25 / 0.155),  # a fused chain of ops: the rest of its gain stands
    (0.300, 0.250, 0.045, 0.32, 0.25 / 0.30),  # slower than the reference: as it was
    (-0.010, 0.052, 0.045, 0.0, 1.0),  # a padded smaller batch put its calls below nothing: no speedup
])
def test_on_the_cpu_clock_no_gain_within_the_harness_is_credited_in_batches(cand, ref, harness, fixed, speedup):
    """What a room can skip of its harness doing the reference's own work (a module call, what
    wraps forward, the loop, the copy into the judge's buffer, and its share of a batch's fixed
    cost) is not credited as a gain in batches; a gain beyond it keeps the rest, and a slower
    candidate is as it was. The candidate is timed at eager's time over that speedup, down to
    CPU_BATCH_LOWERS below its single calls' time; `harness_withheld` says where what was withheld
    set its time."""
    from stitch_mcp.judge.timing import CPU_BATCH_AGREES, CPU_BATCH_LOWERS, Batches, _cpu_batch_bound

    stats = {"median_ms": 0.095, "iqr_ms": 0.0, "min_ms": 0.095}  # eager's: 0.1
    info = _cpu_batch_bound(stats, 0.1, Batches(calls=32, candidate_ms=cand, reference_ms=ref, copy_ms=harness,
                                                fixed_ms=fixed), 0.01)
    assert info["speedup"] == pytest.approx(speedup), info
    single = max(0.095, min(0.1, 0.095 + 0.01 + harness + fixed / 32))  # none within the door and harness either
    timed = max(0.1 / speedup, single / (1 + CPU_BATCH_LOWERS))
    assert stats["median_ms"] == pytest.approx(timed), (stats, info)
    withheld = cand > 0 and speedup < ref / cand
    assert info["harness_withheld"] == (withheld if timed == pytest.approx(0.1 / speedup) else single > 0.095), info
    assert ("below nothing" in info["note"]) == (cand <= 0), info["note"]
    assert ("room_ms" in info) == (timed > (1 + CPU_BATCH_AGREES) * 0.095), info


def _cpu_lane(times: list[float]):
    """A lane of calls on the CPU clock that took `times` on every clock, nothing spent copying."""
    from stitch_mcp.judge.timing import Lane

    return Lane(room_ms=list(times), wall_ms=list(times), cpu_ms=list(times), own_cpu_ms=list(times),
                copy_cpu_ms=[0.0] * len(times))


def _in_turns(eager, candidate):
    """Both rooms' lanes timed alone in turns (judge.timing.time_both_alone)."""
    from stitch_mcp.judge.timing import Timed

    return Timed(eager, candidate, cpu_clock=True)


@pytest.mark.parametrize("eager_beside, eager_alone, cand_beside, cand_alone, timed", [
    (1.0, 0.8, 1.0, 0.8, 0.8),  # honest, the same work: both rooms slower beside each other, 1.0x either way
    (1.0, 0.8, 1.0, 0.9, 0.8),  # its alone lane a little slower (noise within the cap): as beside
    (1.0, 0.97, 1.0, 1.2, 0.97),  # a slow stretch in its alone phase, none in eager's: as beside
    (1.0, 0.5, 0.5, 0.5, 0.5 / 1.15),  # eager slowed 2x beside it, not itself: 1.15x its pair alone, not 2x
    (1.0, 0.5, 0.5, 0.9, 0.5 / 1.15),  # the same, and slower alone: the better of its times counts
])
def test_on_the_cpu_clock_eager_alone_lowers_the_candidate_as_much_up_to_its_pair_alone(
        eager_beside, eager_alone, cand_beside, cand_alone, timed):
    """On the CPU clock, where eager timed alone is lower than beside the candidate, the candidate's
    time is lowered as much (each room runs slower beside the other: eager alone against the
    candidate beside it put honest candidates at 0.6-0.95x), but its speedup stays within
    CPU_ALONE_SLACK of eager alone's over its better time, alone or beside: a room that slowed eager
    beside it gains no more."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import _stats, baselines

    res = {"checks_run": ["timing_cpu_clock"], "findings": [],
           "timing": {"candidate": _stats([cand_beside] * 20), "eager": _stats([eager_beside] * 20)}}
    baselines({}, res, SimpleNamespace(device="cpu"), None, _cpu_lane([eager_alone] * 20),
              _in_turns(_cpu_lane([eager_alone] * 20), _cpu_lane([cand_alone] * 20)))
    timing = res["timing"]
    assert timing["eager"]["median_ms"] == pytest.approx(eager_alone), timing
    assert timing["candidate"]["median_ms"] == pytest.approx(timed), timing
    assert timing["candidate_alone"]["median_ms"] == pytest.approx(cand_alone)
    assert "timed alone too" in timing["eager_note"], timing["eager_note"]


@pytest.mark.parametrize("cand_alone, eager_in_turns, eager_after, beside, speedup", [
    (0.15, 0.15, 0.10, 1.0, 1.15 * 1.3 / 1.5),  # honest, eager's own work, the host 1.5x slower until the close
    (0.10, 0.10, 0.10, 1.0, 1.0),  # the same, no slow stretch: 1.0x
    (0.10, 0.15, 0.10, 1.5, 1.15),  # eager's work, its timers slowing eager while alive: as one after the other
    (0.20, 0.30, 0.10, 1.5, 1.15 * 1.3 * 0.5),  # half eager's speed, eager slowed 3x: at most ALONE_DRIFT more
    (0.05, 0.10, 0.10, 3.0, 2.3),  # honest and 2x faster alone: up to 1.15x that
])
def test_on_the_cpu_clock_the_speedup_alone_is_taken_in_turns_within_what_eager_after_the_close_allows(
        cand_alone, eager_in_turns, eager_after, beside, speedup):
    """The candidate's speedup alone is over eager timed in turns with it (a slow stretch of the host
    falls on both: one phase after the other put honest candidates below 0.9x in 5 of 45 checks),
    but while its room is alive its timers can bill eager's calls (atk_irq_volley): no more than over
    eager after the close times 1 + ALONE_DRIFT, nor above parity unless that says so too."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import ALONE_DRIFT, _stats, baselines

    assert ALONE_DRIFT == 0.3  # the third case's figure
    res = {"checks_run": ["timing_cpu_clock"], "findings": [],
           "timing": {"candidate": _stats([0.3 / beside] * 20), "eager": _stats([0.3] * 20)}}
    baselines({}, res, SimpleNamespace(device="cpu"), None, _cpu_lane([eager_after] * 20),
              _in_turns(_cpu_lane([eager_in_turns] * 20), _cpu_lane([cand_alone] * 20)))
    timing = res["timing"]
    assert timing["eager"]["median_ms"] == pytest.approx(eager_after)
    assert timing["eager"]["median_ms"] / timing["candidate"]["median_ms"] == pytest.approx(speedup), timing


@pytest.mark.parametrize("idle_ms, ref_irq, finding", [(0.0, 3, None), (40.0, 3, "work_while_idle"),
                                                       (0.0, 150, "interrupt_storm")])
def test_on_the_cpu_clock_what_a_room_does_while_eager_is_timed_alone_in_turns_earns_it_nothing(
        idle_ms, ref_irq, finding):
    """Timed alone in turns, the candidate's room is alive while eager's calls run: its CPU between
    its calls beyond eager's, or interrupts billed to eager's calls beyond its own, earn it no
    speedup there as beside (_between_calls)."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import _stats, baselines, settle_cpu_clock

    eager, cand = _cpu_lane([0.1] * 20), _cpu_lane([0.05] * 20)
    cand.idle_cpu_ms = idle_ms
    eager.irq_windows, cand.irq_windows = [(ref_irq, 10.0)] * 20, [(3, 10.0)] * 20
    res = {"checks_run": ["timing_cpu_clock"], "findings": [],
           "timing": {"candidate": _stats([0.075] * 20), "eager": _stats([0.15] * 20)}}
    baselines({}, res, SimpleNamespace(device="cpu"), None, _cpu_lane([0.1] * 20), _in_turns(eager, cand))
    settle_cpu_clock(res)
    assert codes_of(res) == ({finding} if finding else set()), res["findings"]
    speedup = res["timing"]["eager"]["median_ms"] / res["timing"]["candidate"]["median_ms"]
    assert speedup == pytest.approx(1.0 if finding else 2.0), res["timing"]


def test_on_the_cpu_clock_a_slow_stretch_in_the_candidates_alone_phase_costs_it_nothing():
    """An honest candidate doing eager's own work, its alone phase half in a slow stretch of the host
    (its first 25 calls 2.5x slower, then as eager's): it keeps 1.0x. By the phases' medians the cap
    put it at 0.66x; such stretches gave honest rooms 0.41-0.82x in 7 of 26 checks (2-core host)."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import _stats, baselines

    res = {"checks_run": ["timing_cpu_clock"], "findings": [],
           "timing": {"candidate": _stats([0.2] * 50), "eager": _stats([0.2] * 50)}}
    baselines({}, res, SimpleNamespace(device="cpu"), None, _cpu_lane([0.1] * 50),
              _in_turns(_cpu_lane([0.1] * 50), _cpu_lane([0.25] * 25 + [0.1] * 25)))
    timing = res["timing"]
    assert timing["candidate_alone"]["median_ms"] > 0.17, timing  # reported as measured
    assert timing["eager"]["median_ms"] / timing["candidate"]["median_ms"] == pytest.approx(1.0), timing


def test_on_the_cpu_clock_the_alone_cap_credits_what_the_single_calls_credit():
    """A room with a lean door (its single calls, less the reference's door, look 2.5x faster than they
    are) that slowed eager 2x beside it, its batches fused: where the batches ran, its time alone is
    credited as its single calls were (no gain within the door and harness, `skippable_ms`), so that
    the alone cap holds it to 1.15x; its lean alone time taken as it is would have let 2x through."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import _stats, baselines

    res = {"checks_run": ["timing_cpu_clock"], "findings": [],
           "timing": {"candidate": _stats([0.5] * 20), "eager": _stats([1.0] * 20),
                      "batch": {"speedup": 2.0, "skippable_ms": 0.3, "single_credited_ms": 0.8,
                                "note": "the candidate is timed at eager's time over its speedup in batches"}}}
    baselines({}, res, SimpleNamespace(device="cpu"), None, _cpu_lane([0.5] * 20),
              _in_turns(_cpu_lane([0.5] * 20), _cpu_lane([0.2] * 20)))
    timing = res["timing"]
    assert 0.5 / timing["candidate"]["median_ms"] == pytest.approx(1.15), timing
    # the batch note's figures were beside eager: it says what set the time after them
    assert timing["batch"]["note"].endswith(f"the candidate with it, at {timing['candidate']['median_ms']:.4g} ms")


def test_both_rooms_timed_alone_take_turns_warmed_up_each_sampled_the_same_some_calls_always_checked():
    """On the CPU clock the two rooms are timed alone in turns (time_both_alone): rounds of a warm-up
    (a room's first calls after the other's ran 3-5x slower) and a block of timed calls each, the
    room going first alternating. After every timed call of either room the judge samples its outputs (work on
    the shared core that slows the next call: done after the candidate's only, it alone paid for
    it); only the candidate's are kept. ALONE_CHECKED of its calls are always compared with the
    reference (a room can tell them from its interleaved ones), and so is every call at or below
    ALONE_QUANTILE, which sets its time alone: calls that skipped work would. CPU a room used
    outside its calls is its idle_cpu_ms, charged as beside eager."""
    from types import SimpleNamespace

    from stitch_mcp.judge import timing

    rooms = {role: SimpleNamespace(role=role, used=0.0) for role in ("candidate", "reference")}
    for room in rooms.values():
        room.cpu_ms = lambda room=room: room.used
    asked, sampled, cpu = [], [], iter([0.05 + (i * 7 % 60) * 0.01 for i in range(60)])  # distinct, shuffled

    def call(p, room, lane, seed, flush, on_cpu_clock=False, irq=None):
        ms = next(cpu) if irq else 0.02
        room.used += ms + (0.5 if room.role == "candidate" and irq else 0.0)  # it works between its calls
        lane.wall_ms.append(0.1)
        lane.cpu_ms.append(ms)
        asked.append((room.role, seed, bool(irq)))

    t = timing.Timed(timing.Lane(), timing.Lane(), cpu_clock=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timing, "_l2_flush", lambda p: None)
        mp.setattr(timing, "_interrupt_window", lambda: "window")
        mp.setattr(timing, "_timed_call", call)
        mp.setattr(timing, "_sample_outputs", lambda p, into, seed, slots=None: sampled.append((into, seed)))
        alone = timing.time_both_alone(SimpleNamespace(of=lambda room: SimpleNamespace(outputs=[])), rooms, 30, t)
    rounds = min(timing.ALONE_ROUNDS, 30 // timing.ALONE_BLOCK)
    per_round = -(-30 // rounds)
    block = [False] * timing.ALONE_WARMUP_CALLS + [True] * per_round
    turn = {role: [(role, x) for x in block] for role in rooms}
    assert [(role, timed) for role, _, timed in asked] == [
        call for r in range(rounds) for role in ("candidate", "reference")[::1 if r % 2 == 0 else -1] for call in turn[role]]
    timed_seeds = {role: [seed for r, seed, timed in asked if timed and r == role] for role in rooms}
    assert len(alone.candidate.cpu_ms) == len(alone.reference.cpu_ms) == rounds * per_round
    assert [seed for into, seed in sampled if into is t] == timed_seeds["candidate"]
    assert [seed for into, seed in sampled if into is not t] == timed_seeds["reference"]
    assert alone.candidate.idle_cpu_ms == pytest.approx(0.5 * rounds * per_round)
    assert alone.reference.idle_cpu_ms == pytest.approx(0.0, abs=1e-9)
    fastest = int(timing.ALONE_QUANTILE * rounds * per_round) + 1
    assert len(set(t.must_check)) == len(t.must_check) == fastest + timing.ALONE_CHECKED
    assert set(t.must_check) <= set(timed_seeds["candidate"])
    lowest = sorted(zip(alone.candidate.cpu_ms, timed_seeds["candidate"]))[:fastest]
    assert {seed for _, seed in lowest} <= set(t.must_check)


def test_the_judge_does_the_same_work_after_either_rooms_timed_call():
    """After every timed call the judge samples the room's outputs, the reference's as well as the
    candidate's (only the candidate's are kept to be checked): on one core its work between calls
    slows the next call, and done after the candidate's calls only, an honest candidate running
    eager's own relu took 1.1-2.3x eager's time alone, and 0.61-0.73x its speedup in 5 of 20
    checks (2-core host beside two busy loops, 2026-11-28). Interleaved and alone alike."""
    from types import SimpleNamespace

    from stitch_mcp.judge import timing

    buffers = {role: SimpleNamespace(inputs=[], outputs=[(None, f"{role} outputs")]) for role in ("candidate", "reference")}
    p = SimpleNamespace(of=lambda room: buffers[room.role], inputs=[])
    rooms = {role: SimpleNamespace(role=role, call=lambda call: None, cpu_ms=lambda: 0.0) for role in buffers}
    after = []  # (the room whose call it was, the slots sampled, kept to be checked)
    t_alone = timing.Timed(timing.Lane(), timing.Lane(), cpu_clock=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timing, "attach", lambda p, room: None)
        mp.setattr(timing, "_l2_flush", lambda p: None)
        mp.setattr(timing, "_gap", lambda p, flush, seed, slots: ([], 0.0))
        mp.setattr(timing, "_timed_call", lambda p, room, lane, seed, flush, on_cpu_clock=False, irq=None:
                   (after.append([room.role]), lane.room_ms.append(0.1), lane.wall_ms.append(0.1),
                    on_cpu_clock and lane.cpu_ms.append(0.1)))
        mp.setattr(timing, "_sample_outputs", lambda p, into, seed, slots=None: after[-1].extend(
            [slots or buffers["candidate"].outputs, into]))
        mp.setattr(timing, "_interrupt_window", lambda: None)
        t = timing.time_rooms({"timing_iters": 20}, p, rooms)
        timing.time_both_alone(p, rooms, 10, t_alone)
        timing.time_alone(p, rooms["reference"], 10)
    warm_ups = [each for each in after if len(each) == 1]  # untimed: nothing sampled after them
    timed = [each for each in after if len(each) == 3]  # every timed call followed by one sampling
    assert len(warm_ups) + len(timed) == len(after) and len(timed) == 20 + 20 + 10, after
    assert all(role == slots[0][1].split()[0] for role, slots, _ in timed), after  # of its own room's outputs
    assert {role for role, _, _ in timed} == set(rooms)
    kept = {role: {id(into) for r, _, into in timed if r == role} for role in rooms}
    assert kept["candidate"] == {id(t), id(t_alone)}, kept  # the candidate's samples kept, in its check's Timed
    assert not kept["reference"] & {id(t), id(t_alone)}  # the reference's dropped


@pytest.mark.parametrize("cand, harness, credited", [(0.08, 0.03, 0.1), (0.05, 0.03, 0.08), (0.12, 0.03, 0.12)])
def test_on_the_cpu_clock_no_gain_within_the_harness_is_credited_in_single_calls(cand, harness, credited):
    """Where the batches did not run, the same holds against eager's final time (after eager alone)."""
    from stitch_mcp.judge.timing import settle_cpu_clock

    res = {"timing": {"candidate": {"median_ms": cand, "iqr_ms": 0.0, "min_ms": cand},
                      "eager": {"median_ms": 0.1}, "harness_ms": harness}}
    settle_cpu_clock(res)
    assert res["timing"]["candidate"]["median_ms"] == pytest.approx(credited), res["timing"]
    assert res["timing"].get("harness_withheld", False) == (credited != cand)


@pytest.mark.parametrize("forward, passes, written", [(True, False, "relu"), (False, False, "last"), (False, True, "last")])
def test_a_rooms_batches_run_forward_or_its_harness(forward, passes, written):
    """A batch with forward writes each call's outputs; without forward (the judge's lanes of the
    reference's harness) it copies the last call's outputs again, passed first through a module
    call and what wraps forward where asked."""
    import torch

    from stitch_mcp.door import Run
    from stitch_mcp.room import _Room

    room = _Room(door=None)
    room.model, last = torch.nn.ReLU(), torch.full((4,), 7.0)
    room.last_outputs = [last]
    x, target = torch.tensor([-1.0, 2.0, -3.0, 4.0]), torch.zeros(4)
    room.ready_batch = ([([x], [target])], forward, passes)
    room.run(Run(), [])
    expected = {"relu": torch.relu(x), "last": last}[written]
    assert torch.equal(target, expected), target
    assert room.last_outputs[0] is not last if forward else room.last_outputs[0] is last


def test_on_a_cpu_a_room_never_sees_what_the_other_room_wrote():
    """On a CPU each room has shared buffers of its own (judge.prepare.RoomBuffers): a room that
    mapped the reference's could take their pages away between its calls (punching holes, which a
    sealed memfd allows) or read its outputs. This probe compares its output buffers before each
    call with what it last wrote there and answers wrongly once they differ: it passed only once the
    rooms stopped sharing them. On a GPU both rooms map one set, by design (memory)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("on a GPU both rooms share one set of buffers (judge.prepare.RoomBuffers)")
    r = judge(attack_source("atk_read_other_room"), timing=True)
    assert r.verdict == "pass", r.summary
    assert "timed_output_mismatch" not in codes(r)


def test_a_room_can_leave_no_state_in_the_kernel_for_the_rooms_after_it():
    """Keyrings belong to the slot's uid, and the page cache to the host: a key one check added, and
    which torch headers were cached, were read by the next check (red team, 2026-11-28). A room's key
    calls, exact page-cache reads and drops, and new namespaces are refused (EPERM)."""
    r = judge(attack_source("atk_leave_state"))
    assert r.verdict == "pass", r.summary


@pytest.fixture
def room_memory_2gb():
    old = get_settings().room_memory_gb
    configure(room_memory_gb=2)
    yield
    configure(room_memory_gb=old)


def test_a_room_cannot_take_the_hosts_memory(room_memory_2gb):
    """A room's processes are held to STITCH_ROOM_MEMORY_GB (default half the host's memory; a
    cgroup's memory.max, else RLIMIT_AS for CPU work): an uncapped room took a 24 GB host down to
    its last 300 MB (red team, 2026-11-28). A room over it is stopped, and the check says so."""
    from stitch_mcp.judge_room import room_memory_bytes

    assert room_memory_bytes() == 2 * 2 ** 30
    r = judge(attack_source("atk_host_memory", GB="3"))
    assert r.verdict == "error", r.summary
    assert r.error_kind == "host_oom" and "STITCH_ROOM_MEMORY_GB" in r.reasons[0], (r.error_kind, r.reasons)


def test_a_room_that_punches_holes_in_its_shared_buffers_gains_nothing():
    """A room that takes away the pages of its batch output buffers while it is not asked anything
    (fallocate PUNCH_HOLE), so that a room mapping the same buffers faults them in on every call of
    its batches: eager's batches cost it 0.17-0.19 ms a call where the rooms shared them, against
    0.09-0.11 ms beside an honest room (2-core host, 2026-11-27). Its buffers are its own, and its work
    while not asked is charged."""
    for attempt in range(2):  # a loaded host (CI beside other checks) once put eager's batches 1.43x apart
        honest = judge((PROGRAMS / "cand_relu_torch.py").read_text(), timing=True)
        r = judge(attack_source("atk_punch_holes"), timing=True)
        # timed, whatever its verdict: where the judge is slow to read a batch's outputs (a loaded host), the
        # attack can punch its own before they are checked, and fails on them (`timed_output_mismatch`)
        assert r.timing is not None and r.timing.eager is not None, r.summary
        assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 1.3, (r.speedup_vs_eager, r.timing)
        if honest.timing.batch is None or r.timing.batch is None:  # short calls' batches ran only on a CPU
            break
        apart = r.timing.batch.reference_ms / honest.timing.batch.reference_ms
        if apart < 1.4 or attempt:
            assert apart < 1.4, (r.timing.batch, honest.timing.batch)
            break


def _short_lanes(ref_room: float, ref_wall: float, cand_room: float, cand_wall: float, n: int = 20):
    from stitch_mcp.judge.timing import Lane, Timed

    ref = Lane(room_ms=[ref_room] * n, wall_ms=[ref_wall] * n, after_ms=[0.05] * (n - 1), block_medians=[ref_room] * 4)
    cand = Lane(room_ms=[cand_room] * n, wall_ms=[cand_wall] * n, after_ms=[0.05] * (n - 1),
                block_medians=[cand_room] * 4)
    return Timed(reference=ref, candidate=cand)


def test_small_forged_time_is_replaced_through_batches():
    """A 50 us kernel reporting 10.5 us: too little for the per-call bracket, which allows for the
    door's spread between rooms. Where eager's forward in batches is mostly its kernel, the judge's
    clock sees the candidate as fast as the reference, not 4.8x faster, and says so; where eager's
    own dispatch there weighs 1.5x its kernel, batches cannot tell kernels apart, and it is given no
    speedup over eager."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, judge_times

    for reference_ms, named in ((0.059, True), (0.086, False)):
        res = {"findings": [], "checks_run": []}
        batches = Batches(calls=64, candidate_ms=0.059, reference_ms=reference_ms, copy_ms=0.009,
                          candidate_whole_ms=0.0594, reference_whole_ms=reference_ms + 0.0004)
        judge_times(res, SimpleNamespace(device="cuda"), _short_lanes(0.050, 0.40, 0.0105, 0.40), batches)
        assert ("timing_contradicted" in {f["code"] for f in res["findings"]}) is named, res["findings"]
        assert res["timing"]["batch"].get("unverified", False) is not named, res["timing"]["batch"]
        assert res["timing"]["candidate"]["median_ms"] >= 0.045, res["timing"]["candidate"]


# What an H100 host showed (2026-11-27; ms per call): the room's times, and its batches as
# Batches(calls, candidate, reference, copies, their grain, candidate's whole, reference's whole).
GPU_BATCH_CASES = {  # case: (eager's room, the candidate's room, batches, named, its time at least)
    # a busy host, 4.2 us kernels: an honest clamp's heavier dispatch, 0.65x eager's in batches
    "honest_clamp": (0.004224, 0.004224, (256, 0.0629, 0.0586, 0.0504, 0.002, 0.0634, 0.0590), False, 0.004224),
    # the same where eager's batches were disturbed (36 us a call beyond the copies): not believed
    "forger_disturbed": (0.00419, 0.000894, (256, 0.0410, 0.0694, 0.0338, 0.003, 0.0472, 0.0756), False, 0.00419),
    # a room forging its CUDA events at 21%, where eager's forward was lost beside its copies
    "forger_small": (0.004224, 0.00089, (256, 0.0500, 0.0499, 0.0512, 0.0065, 0.0505, 0.0503), False, 0.004224),
    # the same, writing its outputs itself: its calls no longer than eager's copies
    "lean_forger": (0.004224, 0.00089, (256, 0.0080, 0.0586, 0.0504, 0.002, 0.0085, 0.0590), False, 0.004224),
    # a 64 us matmul forging its events at 21%: named
    "forger_mm": (0.0643, 0.0135, (42, 0.1054, 0.1022, 0.0463, 0.003, 0.1253, 0.1222), True, 0.06),
    # the same, its smaller batches padded until its difference of two sizes is half its work: its
    # larger batch holds it to its work, and the noise it made leaves it no speedup (not named)
    "padded_forger_mm": (0.0643, 0.0135, (42, 0.0500, 0.1022, 0.0463, 0.003, 0.1253, 0.1222), False, 0.06),
    # its k calls done as one launch (their buffers are contiguous): 0.9 us a call, lost beside the copies
    "merged_forger": (0.004224, 0.0006, (256, 0.0008, 0.0586, 0.0504, 0.002, 0.0009, 0.0590), False, 0.004224),
    # an honest matmul twice as fast as eager's, its dispatch as heavy: 1.7x in batches, its 2x stands
    "honest_mm": (0.0643, 0.032, (42, 0.0790, 0.1022, 0.0463, 0.003, 0.0990, 0.1222), False, 0.032),
    # an honest kernel of 50 us, its calls back to back as long: its times stand
    "honest_long": (0.1, 0.05, (64, 0.051, 0.104, 0.012, 0.001, 0.052, 0.106), False, 0.05),
    # eager's 12 us kernel outweighs its dispatch; an honest 4 us kernel whose 9 us of dispatch outweigh it
    "honest_dispatch": (0.012, 0.004, (256, 0.018, 0.021, 0.009, 0.001, 0.0184, 0.0214), False, 0.004),
    # eager's own 64 us matmul, events forged at 60%, the GPU kept busy while eager's batches ran
    # (H100): 2.1x in batches beside it, which let its 1.68x stand; eager's lanes alone (the last
    # three) read 0.97x, which stands
    "forger_beside_busy": (0.0647, 0.0385, (42, 0.0915, 0.1463, 0.0496, 0.003, 0.1261, 0.1666,
                                            0.1008, 0.0418, 0.1166), False, 0.0664),
    # a room twice as fast as eager that slows eager's copies beside it (its own forward there, its
    # lane less theirs, shrinks), claiming 4x: the readings disagree, and the lower, 2.07x, stands
    "copies_slowed": (0.128, 0.032, (31, 0.101, 0.165, 0.076, 0.002, 0.111, 0.175, 0.165, 0.041, 0.175), False,
                      0.0619),
    # eager's own matmul claiming 2x, its smaller batches padded, slowing only eager's smaller batches
    # beside it (0.3 ms each): eager's forward there falls and its round trip grows, which lowers the
    # bound on its own forward more (a red-team reading of H100 lanes): the readings disagree, and
    # the lower, 1.16x, stands (where they agreed, a claim up to BATCH_SLACK times it would)
    "round_trip_inflated": (0.0639, 0.03195, (31, 0.06, 0.128, 0.0815, 0.003, 0.1688, 0.1685,
                                              0.1388, 0.0785, 0.1642), False, 0.0553),
    # an honest matmul twice as fast, on a host whose work per call was heavier while both rooms
    # were up (eager's copies 75 us a call beside, 41 alone; H100): its 2x stands
    "honest_mm_drift": (0.128, 0.0643, (31, 0.1321, 0.1992, 0.0753, 0.002, 0.1613, 0.2268, 0.1663, 0.0412, 0.1837),
                        False, 0.0643),
    # the same with every lane beside 50 us a call heavier: the readings disagree, nothing called
    # false, the lower (1.14x) stands
    "honest_mm_more_drift": (0.128, 0.0643, (31, 0.148, 0.216, 0.091, 0.002, 0.177, 0.2337, 0.166, 0.041, 0.1837),
                             False, 0.112),
    # an honest 4x (a 32 us kernel), lanes beside 20 us a call heavier: nothing called false, 2.3x stands
    "honest_4x_drift": (0.128, 0.032, (31, 0.093, 0.186, 0.061, 0.002, 0.122, 0.2037, 0.166, 0.041, 0.1837),
                        False, 0.0558),
}
GPU_BATCHES_READ_LOWER = {"forger_beside_busy", "copies_slowed", "round_trip_inflated", "honest_mm_more_drift",
                          "honest_4x_drift"}


@pytest.mark.parametrize("case", list(GPU_BATCH_CASES))
def test_on_a_gpu_batches_name_forged_times_and_spare_honest_dispatch(case):
    """On a GPU a room's batches time each call's host dispatch as well as its kernel: an honest
    clamp was called forged on a busy H100 host, and a room forging its CUDA events went unseen where
    eager's forward was lost beside its copies (2026-11-27). Where batches cannot tell kernels apart
    (eager's forward lost, or its dispatch as heavy as its kernel there, or the claim within their
    noise) they confirm nothing: no finding, no speedup over eager. Elsewhere they name forged times
    and let honest speedups stand; a room that pads its smaller batches or does its calls as one
    gains nothing by it. Where eager's lanes timed again alone read lower than beside the room, and
    only one reading allows the claim, the lower reading's speedup stands."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, EagerLanes, judge_times

    eager, room, (k, b, r, c, grain, b_whole, r_whole, *alone), named, at_least = GPU_BATCH_CASES[case]
    batches = Batches(k, b, r, c, copy_spread_ms=grain, candidate_whole_ms=b_whole, reference_whole_ms=r_whole,
                      alone=EagerLanes(*alone) if alone else None)
    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cuda"), _short_lanes(eager, 0.40, room, 0.40), batches)
    assert ("timing_contradicted" in {f["code"] for f in res["findings"]}) is named, (res["findings"], res["timing"])
    assert res["timing"]["candidate"]["median_ms"] >= 0.999 * at_least, res["timing"]
    batch = res["timing"]["batch"]
    assert batch.get("lowered", False) is (case in GPU_BATCHES_READ_LOWER), batch
    if case in ("honest_mm", "honest_long", "honest_mm_drift"):
        assert res["timing"]["candidate"]["median_ms"] == pytest.approx(room) and not batch.get("note")
    elif case in GPU_BATCHES_READ_LOWER:
        assert res["timing"]["candidate"]["median_ms"] == pytest.approx(max(room, eager / batch["speedup"]))
        assert res["timing"]["candidate"]["median_ms"] <= 1.001 * at_least, res["timing"]
        assert "the lower one stands" in batch["note"] and not batch.get("unverified"), batch
    elif not named:
        assert res["timing"]["batch"]["unverified"] and "not used" in res["timing"]["batch"]["note"], res["timing"]


def test_on_a_gpu_a_slowed_door_does_not_lift_the_cap():
    """A red-team reading (2026-11-27): a room that keeps the GPU busy while it is not asked (the
    contexts take turns on it) slows eager's calls on the judge's clock but not eager's own time, so
    eager's door, and with it the bracket's allowance, grows; with no check from the batches, the
    bracket then put any claim within reach (6x for eager's own relu). On a GPU such a room gets no
    speedup over eager however its bracket looks; a faster door of its own gains nothing either. Nor
    where eager timed alone, once its room is gone, comes out lower than beside it: the cap follows
    eager's lower time (a second red-team reading found it re-capped there on the CPU's terms, 6x)."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, Lane, baselines, judge_times

    p = SimpleNamespace(device="cuda")
    for ref_wall, cand_wall in ((0.40, 0.40), (1.0, 0.40), (0.40, 0.15), (0.8, 0.40)):
        res = {"findings": [], "checks_run": []}
        batches = Batches(256, 0.0586, 0.0586, 0.0504, copy_spread_ms=0.002, candidate_whole_ms=0.0590,
                          reference_whole_ms=0.0590)
        judge_times(res, p, _short_lanes(0.004224, ref_wall, 0.0007, cand_wall), batches)
        assert res["timing"]["batch"]["unverified"], res["timing"]["batch"]
        assert res["timing"]["candidate"]["median_ms"] >= 0.004224, (ref_wall, cand_wall, res["timing"])
        baselines({}, res, p, None, Lane(room_ms=[0.0042] * 10))
        assert res["timing"]["eager"]["median_ms"] == 0.0042
        assert res["timing"]["candidate"]["median_ms"] >= 0.0042, (ref_wall, cand_wall, res["timing"])


def test_zero_room_time_of_a_short_call_is_replaced():
    """A room clock frozen at 0 on a call shorter than the door's spread, with batches too noisy to
    say anything: no work takes no time, so the judge's estimate (or eager's time) replaces it."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, judge_times

    for wall, batches in ((0.33, None), (0.33, Batches(calls=100, candidate_ms=0.06, reference_ms=0.06, copy_ms=0.058)),
                          (0.25, None)):
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.05, 0.35, 0.0, wall), batches)
        assert "timing_contradicted" in {f["code"] for f in res["findings"]}
        assert res["timing"]["candidate"]["median_ms"] > 0, res["timing"]["candidate"]


def test_honest_short_kernels_are_not_flagged():
    """What an H100 showed for honest few-microsecond kernels: the candidate room's door 30% slower
    than the reference room's for a whole check, and batches that agree with the room's speedup
    within the host work a call does after its last launch."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, judge_times

    for batches in (None, Batches(calls=256, candidate_ms=0.0196, reference_ms=0.0287, copy_ms=0.0136,
                                  candidate_whole_ms=0.0200, reference_whole_ms=0.0291),
                    Batches(calls=256, candidate_ms=0.0225, reference_ms=0.0190, copy_ms=0.0089,
                            candidate_whole_ms=0.0229, reference_whole_ms=0.0194)):
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device="cuda"), _short_lanes(0.0043, 0.40, 0.0046, 0.52), batches)
        assert not res["findings"], res["findings"]
        assert res["timing"]["candidate"]["median_ms"] == pytest.approx(0.0046)


@pytest.mark.slow
def test_a_fork_of_the_room_is_a_background_process(clean_honest):
    """atk_batch_poller's work done by a fork of the candidate's room: it runs the room's own command
    line, so it passed for the room and ran unseen (until ed8aa06, with only work_while_idle and a
    mismatch to show for it); it is told apart by its parent."""
    source = attack_source("atk_batch_poller_child")
    before = Storage()
    r = judge(source, timing=True)
    assert r.verdict == "fail" and "background_processes" in codes(r), (r.verdict, r.integrity.findings)
    assert_contained(r, source, before, clean_honest)


def test_on_a_cpu_batches_bound_short_calls_without_calling_noise_forgery():
    """What a 2-core host showed for `x * 2` in both rooms (2026-11-25): single calls of ~10 us said
    2.1x where batches said 0.88x, and the candidate's door was 0.05 ms slower than the reference's.
    On a CPU both clocks time the same work: the batches raise the room's time to theirs without
    a finding (a forger claiming 1.4x gains nothing), never lower it (the reference's batches ran
    beside the candidate's room), and call the room's times false only beyond CPU_BATCH_SLACK; a
    call that the judge's clock sees take far longer than the door allows still is.
    Where eager timed alone is lower, the speedup stays the lower of the batches' and the room's."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import CPU_BATCH_SLACK, Batches, Lane, baselines, judge_times

    batches = Batches(calls=226, candidate_ms=0.0177, reference_ms=0.0161, copy_ms=0.0062)
    verified = (0.0161 - 0.0062) / (0.0177 - 0.0062)
    for cand_room, cand_wall in ((0.0089, 0.40), (0.0115, 0.40), (0.0130, 0.75), (0.0180, 0.40), (0.0250, 0.40)):
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.0185, 0.40, cand_room, cand_wall), batches)
        assert not res["findings"], res["findings"]
        timed = res["timing"]["candidate"]["median_ms"]
        assert timed == pytest.approx(max(cand_room, 0.0185 / verified), rel=1e-6)
        assert ("speedup in batches" in res["timing"]["batch"].get("note", "")) == (timed > cand_room)
        baselines({}, res, SimpleNamespace(device="cpu"), None, Lane(room_ms=[0.0121] * 10))  # eager alone: lower
        assert res["timing"]["eager"]["median_ms"] == 0.0121
        assert res["timing"]["candidate"]["median_ms"] == pytest.approx(
            max(cand_room, 0.0121 / verified) if timed > cand_room else cand_room, rel=1e-6)
    res = {"findings": [], "checks_run": []}  # the judge's clock saw each call take far longer than the door
    judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.0185, 0.40, 0.0130, 1.4), batches)
    assert codes_of(res) == {"timing_contradicted"}, res["findings"]
    assert res["timing"]["candidate"]["median_ms"] > 0.9
    res = {"findings": [], "checks_run": []}
    forged = 0.0185 / verified / CPU_BATCH_SLACK / 1.1
    judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.0185, 0.40, forged, 0.40), batches)
    assert codes_of(res) == {"timing_contradicted"}, res["findings"]
    assert res["timing"]["candidate"]["median_ms"] == pytest.approx(0.0185 / verified, rel=1e-6)


@pytest.mark.parametrize("sandbox", ["auto", "uid"])
def test_a_room_slowing_eagers_batches_while_not_asked_gains_nothing(sandbox, monkeypatch):
    """atk_busy_beside on a CPU: a room doing eager's own work with its clock at half speed, that
    keeps two threads busy whenever it is not running its own calls back to back (the batches).
    There their work is its room's, seen from outside: the rooms' CPU clock, or `work_while_idle`
    where the rooms are not held to a core (sandbox level uid or below). On a GPU, where the same
    room's kernels cost it no CPU, eager's batches are timed again alone
    (test_gpu_a_room_keeping_the_gpu_busy_beside_eagers_batches_gains_nothing)."""
    monkeypatch.setenv("STITCH_SANDBOX", sandbox)
    configure()  # the worker takes the level from the environment
    try:
        r = judge(attack_source("atk_busy_beside", forged="0.5", threads="2", duty="1.0", spin_us="100"),
                  ref="ref_relu_chain", timing=True)
    finally:
        monkeypatch.undo()
        configure()  # no other test on this worker runs at that level
    assert r.verdict == "pass", r.summary
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 1.3, (r.speedup_vs_eager, r.timing)


def test_eagers_batches_alone_are_eagers_two_lanes_again(monkeypatch):
    """eager_batches_alone asks the reference's room alone for its calls and its copies in batches
    of k/4 and k, BATCH_ROUNDS rounds (again where its forward came out under half its forward
    beside the candidate), and keeps each lane's per call from its lowest rounds; nothing else of
    the batches changes."""
    from types import SimpleNamespace

    from stitch_mcp.door import Call
    from stitch_mcp.judge import timing

    per_call = {False: (0.10, 0.10)}  # ms a call in its first and second run: eager's copies, then its calls
    asked: list[tuple[object, int, bool]] = []

    def run_batch(p, room, batch, flush):
        asked.append((room, len(batch.calls), batch.forward))
        second = len([a for a in asked if a[2] == batch.forward]) > 2 * timing.BATCH_ROUNDS
        return 0.5 + len(batch.calls) * per_call[batch.forward][second]  # 0.5 ms a batch besides its calls

    monkeypatch.setattr(timing, "_run_batch", run_batch)
    monkeypatch.setattr(timing, "_batch_calls", lambda p, ins, outs, n: ([Call(args=[])] * n, list(range(n))))
    beside = timing.Batches(32, 0.2, 0.55, 0.1, candidate_whole_ms=0.22, reference_whole_ms=0.57,
                            slots={"reference": ([], [])})  # eager's forward beside: 0.45 ms a call
    reference = object()
    # eager's forward alone 0.30 ms a call: one run; 0.15, under half its forward beside: a second run
    for calls, runs, call_ms in (((0.40, 0.35), 1, 0.40), ((0.25, 0.20), 2, 0.20)):
        per_call[True] = calls
        asked.clear()
        again = timing.eager_batches_alone(SimpleNamespace(device="cpu"), reference, _short_lanes(0.5, 0.6, 0.2, 0.3),
                                           beside, 2.0)
        assert {room for room, _, _ in asked} == {reference}
        assert len(asked) == runs * timing.BATCH_ROUNDS * 4 and {n for _, n, _ in asked} == {8, 32}
        assert again.alone.call_ms == pytest.approx(call_ms) and again.alone.copy_ms == pytest.approx(0.10)
        assert again.alone.whole_ms == pytest.approx(call_ms + 0.5 / 32)
        assert again.speedup_beside == 2.0 and again.candidate_ms == 0.2 and again.reference_ms == 0.55


def test_a_room_that_works_while_not_asked_earns_no_speedup():
    """The kernel's CPU accounting of the candidate's processes while the judge wrote inputs and
    timed the reference: an honest room measured 0 ms (idle on its door), the poller attack 2.1 s
    of 3.3 s. Beyond IDLE_CPU_SHARE its times earn no speedup, on a GPU too (honest rooms there used
    0-10 ms in 1.8-4.2 s on H100 hosts)."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, judge_times

    for idle_cpu, device, flagged in ((2100.0, "cpu", True), (0.0, "cpu", False), (15.0, "cpu", False),
                                      (2100.0, "cuda", True), (10.0, "cuda", False)):
        batches = Batches(calls=256, candidate_ms=0.0177, reference_ms=0.0161, copy_ms=0.0062,
                          idle_cpu_ms=idle_cpu, idle_wall_ms=3300.0)
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device=device), _short_lanes(0.0185, 0.40, 0.0089, 0.40), batches)
        assert ("work_while_idle" in codes_of(res)) == flagged, (idle_cpu, device, res["findings"])
        assert res["timing"]["batch"]["idle_cpu_ms"] == idle_cpu
        if flagged:
            assert res["timing"]["candidate"]["median_ms"] >= 0.0185, res["timing"]["candidate"]


def _cpu_clock_lanes(cand_cpu: float, claim: float, own: float, idle: float = 0.2, waited: float = 0.0, n: int = 20):
    """Lanes on the CPU clock: the reference's room used 0.30 ms of CPU per call, 0.05 of them its
    forward and 0.02 writing its outputs by its own account (a door of 0.23 ms); each call of either
    room also waited 0.3 ms for the core (and the candidate's `waited` more)."""
    from stitch_mcp.judge.timing import Lane, Timed

    ref = Lane(room_ms=[0.06] * n, wall_ms=[0.6] * n, cpu_ms=[0.30] * n, own_cpu_ms=[0.05] * n,
               copy_cpu_ms=[0.02] * n, idle_cpu_ms=0.2)
    cand = Lane(room_ms=[claim] * n, wall_ms=[cand_cpu + 0.3 + waited] * n, cpu_ms=[cand_cpu] * n,
                own_cpu_ms=[own] * n, copy_cpu_ms=[0.02] * n, idle_cpu_ms=idle)
    return Timed(reference=ref, candidate=cand, cpu_clock=True, idle_wall_ms=300.0)


@pytest.mark.parametrize("cand_cpu, claim, own, idle, waited, finding, timed_ms", [
    (0.27, 0.025, 0.02, 0.2, 0.0, None, 0.04),  # honest: its forward and its copy, 1.75x eager's
    (0.30, 0.001, 0.05, 0.2, 0.0, "timing_contradicted", 0.07),  # a clock slower than its own thread's CPU
    (0.26, 0.012, 0.012, 40.0, 0.0, "work_while_idle", 0.03 + 39.8 / 20),  # works between its calls: charged
    (0.26, 0.012, 0.012, 1.0, 0.0, None, 0.03 + 0.8 / 20),  # a little: charged to its calls
    (0.235, 0.005, 0.005, 0.2, 0.0, None, 0.02),  # skips its copy (writes the judge's buffer itself): the floor
    (0.24, 5.0, 0.01, 0.2, 5.0, None, 0.02 + 5.3 - 1.5 * 0.3),  # hands its work out and waits: charged
])
def test_on_the_cpu_clock_a_call_is_its_rooms_cpu_less_the_doors(cand_cpu, claim, own, idle, waited, finding, timed_ms):
    """On a CPU whose rooms are held to one core, the candidate is timed by the CPU its processes
    used per call less what the door costs the reference's room, whatever it says: a forged clock is
    named and changes nothing, work between its calls or handed out is charged to it (past a share,
    no speedup at all), and no call is timed below writing its outputs."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import judge_times

    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cpu"), _cpu_clock_lanes(cand_cpu, claim, own, idle, waited))
    assert codes_of(res) == ({finding} if finding else set()), res["findings"]
    assert res["timing"]["candidate"]["median_ms"] == pytest.approx(timed_ms, rel=1e-6), res["timing"]
    assert res["timing"]["eager"]["median_ms"] == pytest.approx(0.07, rel=1e-6)
    assert "timing_cpu_clock" in res["checks_run"] and "CPU time" in res["timing"]["method"]
    # what was charged, and for which of the two, so that the Coder can tell its work from the host's
    between, waiting = (idle - 0.2) / 20, max(0.0, waited + 0.3 - 1.5 * 0.3) if waited else 0.0
    said = (f"({between:.4f} ms for its CPU between calls, {waiting:.4f} ms for its waiting)"
            if between or waiting else "charged")
    assert (said in res["timing"]["method"]) == bool(between or waiting), res["timing"]["method"]


def _busy_turns(n: int, every: int, turn_ms: float, judge_queued: bool) -> tuple[list[float], list[float]]:
    """Walls and the judge's waits for its core of `n` calls of 0.3 ms of CPU, every `every`th of
    them `turn_ms` longer: a busy loop's turn before the judge read the answer (`judge_queued`:
    the judge's thread counts it as waiting, runnable, beside the room's CPU), or the room away."""
    walls = [0.4 + (turn_ms if i % every == 0 else 0.0) for i in range(n)]
    return walls, [w - 0.1 if judge_queued else 0.3 for w in walls]


@pytest.mark.parametrize("ref_every, cand_every, judge_queued, charged", [
    (3, 2, True, 0.0),  # 34% of eager's calls waited behind a busy loop, 50% of its own: not the candidate's doing
    (1000, 1, True, 0.0),  # all of its calls, none of eager's: still the core's other work
    (1000, 1, False, 3.0 - 0.5 * 0.1),  # away from the core in every call: handed out, charged
    (1000, 3, False, (34 - 10) * 3.0 / 90 - 0.5 * 0.1),  # in a third of its calls (a median saw nothing):
    # charged, less the tenth of its calls left out
])
def test_on_the_cpu_clock_only_waiting_off_the_core_is_charged(ref_every, cand_every, judge_queued, charged):
    """Each call's wall time less its room's CPU, less the judge's own wait for the core beyond that
    CPU, is what the room waited on something else; the candidate is charged for that beyond
    WAIT_SLACK of the reference's, compared over most of their calls (a busy loop's turns come in
    about half the calls of some checks, where medians jumped by a whole turn: 0.14x for eager's own
    code). A room away in a third of its calls is charged for them."""
    from stitch_mcp.judge.timing import Lane, Timed, _waited_ms

    def lane(every):
        walls, queued = _busy_turns(100, every, 3.0, judge_queued or every == ref_every)
        return Lane(wall_ms=walls, cpu_ms=[0.3] * 100, judge_queued_ms=queued)

    t = Timed(reference=lane(ref_every), candidate=lane(cand_every), cpu_clock=True)
    assert _waited_ms(t) == pytest.approx(charged, abs=0.01)


def test_the_judge_reads_its_own_wait_for_the_core():
    """cpusets.queued_ms is the kernel's count of the judge's thread waiting, runnable, for a core:
    beside a busy process on its one core it grows by about half the time spent."""
    import subprocess
    import sys

    from stitch_mcp.cpusets import queued_ms

    core = min(os.sched_getaffinity(0))
    before_affinity = os.sched_getaffinity(0)
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"])
    try:
        os.sched_setaffinity(0, {core})
        time.sleep(0.3)  # the busy process is on the core
        q0, t0 = queued_ms(), time.perf_counter()
        while time.perf_counter() - t0 < 0.4:
            pass
        waited = queued_ms() - q0
    finally:
        busy.kill()
        busy.wait()
        os.sched_setaffinity(0, before_affinity)
    assert 50.0 < waited < 400.0, waited


@pytest.mark.parametrize("ref_irq, cand_irq, finding", [(3, 3, None), (150, 3, "interrupt_storm"), (150, 150, None),
                                                       (150, 80, "interrupt_storm"), (30, 10, None)])
def test_on_the_cpu_clock_interrupts_billed_to_the_reference_take_the_speedup(ref_irq, cand_irq, finding):
    """Interrupts on the judge's core while each room ran (per wall ms of its windows): where the
    reference's far outnumber the candidate's (timers it armed to expire on the reference's time),
    `interrupt_storm` and no speedup, once eager's time is final: what counts is the difference
    (timers expiring in its own windows bill itself), so half a storm of its own does not hide one;
    a storm in both rooms' windows costs the candidate as much as the reference."""
    from types import SimpleNamespace

    from stitch_mcp.judge.timing import Batches, judge_times, settle_cpu_clock

    t = _cpu_clock_lanes(0.27, 0.025, 0.02)
    t.cpu_batches = Batches(calls=64, candidate_ms=0.03, reference_ms=0.06, copy_ms=0.0)  # the door cancelled
    t.reference.irq_windows, t.candidate.irq_windows = [(ref_irq, 10.0)] * 20, [(cand_irq, 10.0)] * 20
    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cpu"), t)
    assert codes_of(res) == ({finding} if finding else set()), res["findings"]
    assert res["timing"]["interrupts_per_ms"] == [ref_irq / 10.0, cand_irq / 10.0]
    settle_cpu_clock(res)
    assert (res["timing"]["candidate"]["median_ms"] >= res["timing"]["eager"]["median_ms"]) == bool(finding)


def codes_of(res: dict) -> set[str]:
    return {f["code"] for f in res["findings"]}


@pytest.mark.slow
def test_timed_calls_that_skip_work(clean_honest):
    source = attack_source("atk_timed_garbage")
    before = Storage()
    r = judge(source, timing=True)
    assert r.verdict == "fail" and "timed_output_mismatch" in codes(r), r.summary
    assert_contained(r, source, before, clean_honest)


# ------------------------------------------------------------------ the build as an attack surface


@pytest.mark.slow
def test_build_include_of_a_server_file(secrets_set, clean_honest):
    """#include of a file of the server's: its text must not come back in the diagnostics."""
    source = attack_source("atk_build_include", SECRET_PATH=str(secrets_set["file"]))
    before = Storage()
    r = judge(source)
    assert r.verdict == "error", r.summary
    assert secrets_set["text"] not in text_of(r), "the compiler printed the server's file into the report"
    assert_contained(r, source, before, clean_honest)


@pytest.mark.slow
def test_build_flags_run_a_program(tmp_path, clean_honest):
    """-wrapper in extra_cflags runs a shell in front of cc1: it must not reach the server's files."""
    mark = Path(get_settings().data_dir).expanduser() / f"wrapper-ran-{uuid.uuid4().hex[:8]}"
    source = attack_source("atk_build_wrapper", MARK_PATH=str(mark))
    before = Storage()
    try:
        r = judge(source)
        assert not mark.exists(), "the compiler wrapper wrote into the server's data folder"
        assert r.verdict in ("fail", "error"), r.summary
        assert_contained(r, source, before, clean_honest)
    finally:
        mark.unlink(missing_ok=True)


# ------------------------------------------------------------------ through the MCP server


@pytest.mark.slow
@pytest.mark.anyio
async def test_attack_through_the_server_in_memory():
    """The harness-patching attack through the MCP tool (in-memory client): fail, and the server
    answers the next call."""
    from faultkit import call_until_done
    from mcp import Client

    from stitch_mcp.server import create_server

    source = attack_source("atk_patch_harness")
    async with Client(create_server()) as client:
        out = await call_until_done(client, "compile_and_check", {
            "reference": str(PROGRAMS / "ref_relu.py"), "candidate": source, "timing": False,
            "compare_compile": False}, max_wait_s=60, deadline_s=600)
        assert out["verdict"] == "fail", out
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "compile_and_check" in tools


# ------------------------------------------------------------------ GPU versions


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_forged_event_times(clean_honest):
    """CUDA: the room's torch.cuda.Event.elapsed_time patched to report 21% of a few-microsecond kernel's time,
    too little for the judge's per-call bracket to resolve: batches of back-to-back calls bound it."""
    source = (ATTACKS / "gpu_atk_forge_events.py").read_text()
    before = Storage()
    r = judge(source, ref="attacks/gpu_ref_small_relu", timing=True)
    if r.verdict != "error":
        # named where eager's batches go at its kernel's pace; where they time host work, not believed
        assert "timing_contradicted" in codes(r) or r.timing.batch.unverified, (r.integrity.findings, r.timing)
        assert r.timing.candidate is not None and r.timing.eager is not None
        assert r.timing.candidate.median_ms > 0.3 * r.timing.eager.median_ms, r.timing
        assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 1.6, r.speedup_vs_eager
    assert_contained(r, source, before, clean_honest)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("duty", ["0.3", "0.6"])
def test_gpu_a_room_keeping_the_gpu_busy_beside_eagers_batches_gains_nothing(duty, clean_honest):
    """CUDA: a room doing eager's own 1024x1024 matmul, its CUDA events forged at half (2x claimed),
    that keeps the GPU busy from a sleeping thread whenever it is not running its own calls back to
    back: eager's batches beside it are slowed (the contexts take turns), and with them the speedup
    its claim is checked against (forged claims of 1.67x and 2x stood on an H100 before eager's
    batches were timed again once its room is gone)."""
    source = attack_source("atk_busy_beside", forged="0.5", threads="1", duty=duty, spin_us="1000")
    before = Storage()
    r = judge(source, ref="attacks/gpu_ref_mm", timing=True)
    assert r.verdict == "pass", r.summary
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager < 1.5, (r.speedup_vs_eager, r.timing)
    assert_contained(r, source, before, clean_honest)


@pytest.mark.gpu
def test_gpu_an_honest_faster_matmul_keeps_its_speedup():
    """No false alarm where eager's batches are timed again alone: a matmul done once against a
    reference doing it twice (kernels of tens of microseconds, timed in batches too) keeps the
    speedup its room measured, about 2x. Where the host's work per call moved between the phases
    (eager's copies 77 us a call beside it, 42 alone: 1 check in 6 on an H100 in session 28, given
    1.0x then), the lower reading of the batches stands, above 1."""
    r = judge((PROGRAMS / "gpu_cand_mm.py").read_text(), ref="gpu_ref_mm_twice", timing=True)
    assert r.verdict == "pass", r.summary
    assert "timing_contradicted" not in codes(r), (r.integrity.findings, r.timing)
    lowered = r.timing.batch is not None and r.timing.batch.lowered
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager > (1.1 if lowered else 1.5), (r.speedup_vs_eager,
                                                                                              r.timing)


@pytest.mark.gpu
@pytest.mark.parametrize("program", ["cand_relu_torch", "gpu_cand_relu"])
def test_gpu_honest_short_kernels_keep_their_times(program):
    """No false alarm: honest kernels of a few microseconds (torch's and a CUDA extension's) go through
    the batch bracket, are called nothing, and keep the times their room measured, or, where batches
    time host work rather than kernels this short, are given no speedup over eager (and told why)."""
    r = judge((PROGRAMS / f"{program}.py").read_text(), ref="attacks/gpu_ref_small_relu", timing=True)
    assert r.verdict == "pass", r.summary
    assert "timing_contradicted" not in codes(r), (r.integrity.findings, r.timing)
    assert r.timing.batch is not None, r.timing
    room = r.timing.batch.room_ms or r.timing.candidate.median_ms
    if r.timing.batch.unverified:
        assert r.timing.candidate.median_ms >= min(room, r.timing.eager.median_ms), r.timing
    else:
        assert not r.timing.batch.note and r.timing.candidate.median_ms == pytest.approx(room), r.timing


def test_on_a_busy_cpu_batches_that_say_nothing_grant_no_unseen_speedup():
    """What a loaded 2-core host did to a room reporting a fifth of its time for eager's own relu
    (2026-11-26): its batches of 144 calls were cut by the scheduler until they took less than the
    copies alone, and said nothing; the room's 0.014 ms stood, 4.5x eager. Where neither one call's
    bracket nor the batches can check a room, it gets no speedup the bracket cannot see with all its
    jitter (here: none); a room slower than eager is left as it is, and nothing is called false."""
    from types import SimpleNamespace

    import dataclasses

    from stitch_mcp.judge.timing import Batches, Lane, baselines, judge_times

    said_nothing = Batches(calls=144, candidate_ms=0.1237, reference_ms=0.2569, copy_ms=0.173)
    for cand_room, cand_wall, expected in ((0.0138, 0.40, 0.0620), (0.0138, 0.33, 0.0620), (0.09, 0.45, 0.09)):
        res = {"findings": [], "checks_run": []}
        judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.0620, 0.35, cand_room, cand_wall), said_nothing)
        assert not res["findings"], res["findings"]
        assert res["timing"]["candidate"]["median_ms"] == pytest.approx(expected), res["timing"]
        assert res["timing"]["batch"]["unverified"]
        if cand_room < 0.0620:  # eager timed alone again at 0.05 ms: the cap follows it down
            baselines({}, res, SimpleNamespace(device="cpu"), None, Lane(room_ms=[0.05] * 10))
            assert res["timing"]["candidate"]["median_ms"] == pytest.approx(0.05), res["timing"]
    res = {"findings": [], "checks_run": []}  # on a GPU too (_gpu_batch_bound): its calls below eager's copies
    said_nothing.candidate_whole_ms, said_nothing.reference_whole_ms = 0.1250, 0.2580
    judge_times(res, SimpleNamespace(device="cuda"), _short_lanes(0.0620, 0.35, 0.0138, 0.40), said_nothing)
    assert not res["findings"] and res["timing"]["batch"]["unverified"], res["timing"]["batch"]
    assert res["timing"]["candidate"]["median_ms"] == pytest.approx(0.0620)
    # a quiet host: an honest forward 33x eager's, small beside its copies but well above their grain
    quiet = Batches(calls=16, candidate_ms=0.065, reference_ms=0.25, copy_ms=0.06, copy_spread_ms=0.002)
    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.2, 0.5, 0.006, 0.31), quiet)
    assert not res["findings"] and not res["timing"]["batch"].get("unverified"), res["timing"]["batch"]
    assert res["timing"]["candidate"]["median_ms"] == pytest.approx(0.006)
    # the same on a busy host, where the copies' rounds can all be cut alike: a tenth of the batch call
    res = {"findings": [], "checks_run": []}
    judge_times(res, SimpleNamespace(device="cpu"), _short_lanes(0.2, 0.5, 0.006, 0.31),
                dataclasses.replace(quiet, busy_host=True))
    assert not res["findings"] and res["timing"]["batch"]["unverified"], res["timing"]["batch"]
    assert res["timing"]["candidate"]["median_ms"] == pytest.approx(0.2)


def test_a_room_idling_through_its_smaller_batches_gains_at_most_the_doors_spread():
    """A room knows how many calls each batch holds: sleeping through its batches of k/4 shrinks the
    difference of the two sizes, which cancels the round trip, to nothing. Its larger batch less
    the reference's round trip (and the door's spread between rooms) still bounds it."""
    from stitch_mcp.judge.timing import _per_call

    def walls(round_trip: float, per_call: float, idled: float = 0.0) -> dict:
        return {(lane, n): [round_trip + n * per_call + (idled if lane == "candidate" and n == 4 else 0.0)]
                for lane in ("reference", "copy", "candidate") for n in (4, 16)}

    for idled in (0.0, 0.6):
        batches = _per_call(walls(0.3, 0.05, idled), 16, [0.0, 0.0], door=0.1)
        assert batches.reference_ms == pytest.approx(0.05)
        assert batches.candidate_ms == pytest.approx(0.05 if not idled else (1.1 - 0.3 - 0.1) / 16)


def test_on_the_cpu_clock_each_round_of_batches_runs_in_an_order_drawn_afresh():
    """A batch inherits from the one before it (caches, the judge's work after it). In a fixed order
    the candidate's two sizes each followed the reference's harness of the same size, and eager's
    own relu as the candidate came out at 0.84-0.93x in loaded checks (2026-11-28). Every round
    holds each lane's two sizes once, and across rounds each batch follows every other kind."""
    from stitch_mcp.judge.timing import CPU_LANES, _cpu_round_order

    kinds = {(larger, lane[0]) for larger in (False, True) for lane in CPU_LANES}
    followed: dict[tuple, set] = {kind: set() for kind in kinds}
    for _ in range(400):
        order = [(larger, lane[0]) for larger, lane in _cpu_round_order()]
        assert sorted(order) == sorted(kinds)
        for before, after in zip(order, order[1:]):
            followed[after].add(before)
    assert all(followed[kind] == kinds - {kind} for kind in kinds), followed
