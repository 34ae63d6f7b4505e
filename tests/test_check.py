"""compile_and_check on the CPU path: real builds, real worker processes, purpose-written programs.

Each hacking candidate in tests/programs/ must be caught by the named finding; each failure mode
must give a clear verdict with its cause and leave nothing running.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from timeout_report import record_wait

from stitch_mcp import cpusets
from stitch_mcp.check import compile_and_check, trial_plan
from stitch_mcp.config import configure, get_settings
from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.judge import timing
from stitch_mcp.store import get_workspace

PROGRAMS = Path(__file__).resolve().parent / "programs"


def prog(name: str) -> str:
    return str(PROGRAMS / f"{name}.py")


def check(ref: str, cand: str, **kw):
    kw.setdefault("timing", False)
    kw.setdefault("compare_compile", False)
    return compile_and_check(reference=prog(ref), candidate=prog(cand), **kw)


def codes(report) -> set[str]:
    return {f.code for f in report.integrity.findings if f.severity == "error"}


def workers_running() -> list[int]:
    """Worker processes this test process started that are still alive (its idle spares aside),
    once those that reported have exited (a check reads its run stage's result without waiting
    for its worker's exit: worker.settle)."""
    from faultkit import idle_spare_of

    from stitch_mcp.worker import _descendants, settle

    settle()
    alive = []
    for pid in _descendants(os.getpid()):
        if idle_spare_of(pid, {os.getpid()}):
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"stitch_mcp.worker" in fh.read():
                    alive.append(pid)
        except OSError:
            pass
    return alive


SHORT_RUN_TIMEOUT_S = 20  # the run stage's clock includes the worker importing torch: 8 s was not
# enough on a loaded 2-core host ("timed out after 8 s during stage 'start'", before the candidate ran)


@pytest.fixture
def short_run_timeout():
    old = dict(run_timeout_s=get_settings().run_timeout_s)
    configure(run_timeout_s=SHORT_RUN_TIMEOUT_S)
    yield
    configure(**{k: None for k in old})


@pytest.fixture(scope="session")
def cpp_cold():
    """The honest C++ candidate, built once per session (cold), then checked again (warm)."""
    t0 = time.monotonic()
    cold = check("ref_relu", "cand_relu_cpp", timing=True)
    cold_s = time.monotonic() - t0
    return cold, cold_s


# ------------------------------------------------------------------ honest candidates


def test_a_candidate_that_used_a_multiprocessing_pool_is_not_called_a_background_process():
    """Python keeps its resource tracker and fork server running once a spawn or forkserver pool has
    been used, closed or not (red team, 2026-11-28: a false background_processes)."""
    r = check("ref_relu", "cand_relu_mp_pool")
    assert r.verdict == "pass", r.summary
    assert not [f for f in r.integrity.findings if f.code == "background_processes"], r.integrity.findings


def test_honest_torch_candidate_passes_with_timing():
    r = check("ref_relu", "cand_relu_torch", timing=True)
    assert r.verdict == "pass", r.summary
    assert r.candidate_id and r.task_id
    assert len(r.correctness.trials) == 5 and all(t.ok for t in r.correctness.trials)
    dists = {t.inputs for t in r.correctness.trials}
    assert {"task", "normal", "heavy_tailed"} <= dists
    assert r.correctness.atol == pytest.approx(1e-4)
    assert r.timing.candidate and r.timing.candidate.median_ms > 0 and r.timing.candidate.calls >= 10
    assert r.timing.eager and r.speedup_vs_eager and r.speedup_vs_eager > 0
    assert "interleaved" in r.timing.method
    # held to one core by a cpuset where this host allows it (stitch_mcp.cpusets): timed by the rooms' CPU
    on_cpu_clock = not cpusets.unavailable()
    assert ("read by the judge" if on_cpu_clock else "checked against the judge's clock") in r.timing.method
    assert ("one core" in r.timing.method) == on_cpu_clock, r.timing.method
    assert {"input_mutation", "unwritten_output", "timed_outputs",
            "timing_cpu_clock" if on_cpu_clock else "timing_bracket"} <= set(r.integrity.checks_run)
    if on_cpu_clock and r.timing.batch is not None:  # calls this short: batches, in rounds spread over a while
        rounds, spent = r.timing.batch.rounds, r.stage_seconds["timing_batches"]
        assert rounds >= timing.BATCH_ROUNDS, r.timing.batch
        assert rounds == timing.CPU_BATCH_MAX_ROUNDS or spent >= timing.CPU_BATCH_SPAN_S, (rounds, spent)
    assert r.isolation, "the report says how the candidate's room was isolated"
    assert r.route is not None
    stored = get_workspace().latest_report("check", candidate_id=r.candidate_id)
    assert stored and stored["verdict"] == "pass"


def test_eager_is_timed_beside_every_candidate():
    """Eager is timed afresh beside every candidate (interleaved blocks); only torch.compile's
    baseline is cached per task, so without it nothing comes from the cache."""
    check("ref_scale", "cand_scale_ok", timing=True)
    r = check("ref_scale", "cand_scale_ok", timing=True)
    assert r.verdict == "pass", r.summary
    assert r.timing.eager is not None and r.timing.eager_block_spread is not None
    assert not r.timing.baselines_cached


def _set_eager_room(task_id: str, median_ms: float, age_s: float = 0.0) -> None:
    ws = get_workspace()
    body = ws.latest_report("baseline", task_id=task_id)
    for record in body["devices"].values():
        record["eager_room"]["median_ms"] = median_ms
        record["eager_room_at"] = time.time() - age_s
    ws.add_report("baseline", body, task_id=task_id)


def _eager_room(task_id: str) -> float:
    return next(iter(get_workspace().latest_report("baseline", task_id=task_id)["devices"].values()))[
        "eager_room"]["median_ms"]


TRIES_FOR_A_CLEAN_CHECK = 8


@pytest.mark.timeout(240)  # four to eighteen timed checks: 19 s alone, 31 s beside another test on 2 cores
def test_eager_is_timed_alone_again_only_where_it_was_slower_beside_the_candidate():
    """A task's first check times the reference's room alone as well (the candidate's room ended) and
    caches that time; a later check whose eager beside the candidate is within 2% of it skips that
    step, one whose eager is slower (or whose cached time is old) times it alone again, and the
    cached time never goes up."""
    def timed(progress):
        r = check("ref_scale", "cand_scale_ok", timing=True, progress=progress)
        assert r.verdict == "pass", r.summary
        return r, "timing eager alone" in progress.messages

    def clean(r) -> bool:  # only a clean check caches: on a busy host the batches may correct a time
        return not r.integrity.findings and not (r.timing.batch and r.timing.batch.room_ms)

    # a 2-core host's batches raise the candidate's time in many checks (docs/benchmarks/cpu-2026-11-26-
    # loaded-repeat.md, session 16): four tries each were not always enough (CI, 2026-11-26)
    for _ in range(TRIES_FOR_A_CLEAN_CHECK):
        r, _ = timed(Progress())
        if clean(r):
            break
    assert _eager_room(r.task_id) > 0, "the task's first clean check cached its eager time alone"
    _set_eager_room(r.task_id, 1e9)  # anything beside the candidate agrees with it
    assert timed(Progress())[1] is False
    for _ in range(TRIES_FOR_A_CLEAN_CHECK):
        _set_eager_room(r.task_id, 1e9, age_s=3600)  # but not for ever
        again, alone = timed(Progress())
        assert alone is True
        if clean(again):
            break
    assert _eager_room(r.task_id) < 1e9, ("a lower time alone replaces the cached one", again.timing)
    _set_eager_room(r.task_id, 1e-9)  # nothing does
    assert timed(Progress())[1] is True
    assert _eager_room(r.task_id) == 1e-9, "a higher time alone never replaces a lower cached one"


def test_every_call_gets_its_input_in_the_tasks_shape():
    """The room keeps the views of a timed call it has seen before (door.Door's reused Call); a
    forward that changes its input's shape in place changes only its own alias, never what the next
    call is handed."""
    r = check("ref_relu", "cand_reshapes_input_in_place", timing=True)
    assert r.verdict == "pass", r.summary
    assert "timed_outputs" in r.integrity.checks_run and not codes(r), r.integrity.findings


def test_cached_times_of_another_clock_are_not_used():
    """A task's cached baselines name the clock they were taken on: on a host whose CPU rooms are
    timed by their CPU on one core, times an earlier version took on the wall clock (several threads)
    are not compared with them, and the next clean check replaces them."""
    from stitch_mcp.check import _cached_baselines

    r = check("ref_scale", "cand_scale_ok", timing=True)
    assert r.verdict == "pass", r.summary
    ws = get_workspace()
    body = ws.latest_report("baseline", task_id=r.task_id)
    clock = "cpu" if not cpusets.unavailable() else "wall"
    assert body["devices"]["cpu"]["clock"] == clock
    assert "cpu" in _cached_baselines(ws, r.task_id, get_settings().timing_iters)
    body["devices"]["cpu"]["clock"] = "wall" if clock == "cpu" else "cpu"
    ws.add_report("baseline", body, task_id=r.task_id)
    assert _cached_baselines(ws, r.task_id, get_settings().timing_iters) == {}


def test_every_trial_seed_is_drawn_for_its_check():
    """No trial's inputs can be rebuilt ahead of a check: not the heavy-tailed trial's, nor those of
    the one with re-initialised weights (a room that rebuilt fixed-seed inputs at import passed
    while wrong elsewhere)."""
    plans = [trial_plan(5) for _ in range(3)]
    for i in range(5):
        assert len({plan[i][0] for plan in plans}) == 3, plans
    assert [(d, w) for _, d, w in plans[0]] == [("task", "task"), ("task", "task"), ("normal", "task"),
                                                ("heavy_tailed", "task"), ("task", "reinit")]
    assert trial_plan(7)[-1][2] == "reinit" and trial_plan(7)[4][2] == "task"


@pytest.mark.parametrize("ref,cand", [("ref_tuple_init", "cand_tuple_init"), ("ref_bounds_init", "cand_bounds_init")])
def test_the_constructors_arguments_reach_modelnew_as_they_are(ref, cand):
    """get_init_inputs() crosses to the room as JSON: its tuples came out as lists, and an infinite
    bound as None, and a candidate that concatenated a tuple, checked its type, or read the bound as
    a float raised where the reference did not."""
    r = check(ref, cand)
    assert r.verdict == "pass", r.summary


def test_weights_are_reinitialised_and_copied():
    r = check("ref_linear", "cand_linear_ok")
    assert r.verdict == "pass", r.summary
    assert r.correctness.trials[-1].weights == "reinit"


def test_timing_after_reinitialised_weights_runs_on_the_tasks_weights_again():
    """The last trial re-initialises the weights; timing restores the task's (the reference's room
    has them) in the judge and the candidate's room alike: the timed outputs still check out."""
    r = check("ref_linear", "cand_linear_ok", timing=True)
    assert r.verdict == "pass", r.summary
    assert r.correctness.trials[-1].weights == "reinit"
    assert "timed_outputs" in r.integrity.checks_run and not codes(r), r.integrity.findings


def test_cpp_candidate_builds_runs_and_is_cached(cpp_cold):
    cold, cold_s = cpp_cold
    assert cold.verdict == "pass", cold.summary
    assert cold.build.ok and cold.build.extensions and cold.build.extensions[0].name == "relu_cpp"
    assert cold.timing.candidate is not None
    batch = cold.timing.batch
    if batch is not None and "CPU time" in cold.timing.method:  # eager's single calls are 2.7-7x this C++
        # loop's: its batches sized on its own calls, not the loop's (16 calls left the door's 0.5 ms a
        # batch beside 4 calls of 0.06 ms, and eager's time per call noisy)
        assert batch.reference_calls and batch.reference_calls > batch.calls, batch
        assert f"{batch.reference_calls} the reference's" in cold.timing.method
    t0 = time.monotonic()
    warm = check("ref_relu", "cand_relu_cpp")
    warm_s = time.monotonic() - t0
    assert warm.verdict == "pass", warm.summary
    assert warm.build.cached and warm.stage_seconds.get("build") == 0.0
    assert warm.build.extensions and warm.build.extensions[0].cached
    print(f"\nC++ candidate: cold {cold_s:.1f} s, warm {warm_s:.1f} s")


@pytest.mark.timeout(180)  # one C++ build: 20 s on a loaded 2-core host
@pytest.mark.parametrize("cand,name", [("cand_relu_cpp_lazy", "relu_cpp_lazy"), ("cand_relu_cpp_load_tmp", "relu_cpp_tmp")])
def test_an_extension_built_on_first_use_is_built_by_the_build_stage(cand, name):
    """load_inline on the first forward, cpp_extension.load of a temporary file at construction: the
    build stage builds the model and calls it once on the meta device, so the extension is built
    there (on a GPU host: before the check holds any GPU memory) and the run stage's room is
    handed it, built."""
    r = check("ref_relu", cand)
    assert r.verdict == "pass", r.summary
    built = {e.name: e for e in r.build.extensions}
    assert name in built and not built[name].cached, r.build
    assert r.stage_seconds["build"] >= built[name].seconds > 0
    # the run stage's room only imported it (its load includes the first call): a build of this
    # extension takes 10 s or more on this host
    assert r.stage_seconds["load"] < built[name].seconds / 2, r.stage_seconds


@pytest.mark.timeout(300)  # two C++ builds of the same source
def test_an_extension_named_afresh_in_every_process_is_built_again_not_mistaken(tmp_path):
    """cpp_extension.load under a name drawn afresh each time (to dodge torch's own extension
    cache): what the build stage built exports another module name, so the run stage's room builds
    its own (a prebuilt module under the wrong name failed the candidate's construction)."""
    source = Path(prog("cand_relu_cpp_load_tmp")).read_text()
    fixed = 'load(name="relu_cpp_tmp",'
    assert fixed in source
    cand = tmp_path / "cand_relu_cpp_load_random_name.py"
    cand.write_text("import uuid\n" + source.replace(fixed, 'load(name="relu_cpp_tmp_" + uuid.uuid4().hex[:8],'))
    r = compile_and_check(reference=prog("ref_relu"), candidate=str(cand), timing=False, compare_compile=False)
    assert r.verdict == "pass", r.summary


def test_the_rehearsal_writes_nothing_where_the_candidate_points(tmp_path):
    """The candidate's import plants links in its room's folder (the server sees the same folder)
    to a file of ours, under the names a trusted process might write there; the build stage (it
    runs: the source names load_inline) and its rehearsal follow none of them."""
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    names = ["reference.py", "reference_program.py", "program.py", "spec.json", "inputs.py"]
    plant = ("import os  # a load_inline would come here\n"
             f"for _n in {names!r}:\n"
             "    try:\n        os.remove(_n)\n    except OSError:\n        pass\n"
             f"    os.symlink({str(victim)!r}, _n)\n")
    cand = tmp_path / "cand_links.py"
    cand.write_text(plant + Path(prog("cand_relu_torch")).read_text())
    r = compile_and_check(reference=prog("ref_relu"), candidate=str(cand), timing=False, compare_compile=False)
    assert victim.read_text() == "untouched"
    assert r.verdict == "pass", r.summary


@pytest.mark.timeout(120)
def test_a_first_call_that_loops_without_building_ends_the_rehearsal_early(tmp_path):
    """A candidate whose forward loops forever on the meta device (and works on a real one): the
    build stage's rehearsal ends after build_room.REHEARSAL_IDLE_S with no compiler running,
    not at the build's whole limit (300 s), and the run stage judges the candidate as usual."""
    from stitch_mcp.build_room import REHEARSAL_IDLE_S

    cand = tmp_path / "cand_meta_loop.py"  # its source names load_inline: the build stage runs
    cand.write_text(Path(prog("cand_relu_torch")).read_text().replace(
        "return torch.clamp", "while x.is_meta:  # no load_inline here\n            pass\n        return torch.clamp"))
    assert "is_meta" in cand.read_text()
    r = compile_and_check(reference=prog("ref_relu"), candidate=str(cand), timing=False, compare_compile=False)
    assert r.verdict == "pass", r.summary
    assert REHEARSAL_IDLE_S <= r.stage_seconds["build"] < REHEARSAL_IDLE_S + 30, r.stage_seconds


def test_publishing_a_build_follows_no_link_and_opens_no_fifo(tmp_path):
    """What a room built is copied out while the room may still run: a link to a file of ours (a
    .so, a `done` marker, a whole object folder, the build folder itself) is never followed, and a
    FIFO does not block the copy."""
    from stitch_mcp.build_room import publish_build

    secret = tmp_path / "secret.txt"
    secret.write_text("the server's")
    objects = tmp_path / "room" / "build" / "objects"
    (objects / "k1").mkdir(parents=True)
    (objects / "k1" / "done").write_text("ok")
    (objects / "k1" / "ext.so").write_bytes(b"\x7fELF")
    os.symlink(secret, objects / "k1" / "leak.so")
    os.mkfifo(objects / "k1" / "fifo")
    (objects / "k2").mkdir()
    os.symlink(secret, objects / "k2" / "done")
    os.symlink(tmp_path, objects / "k3")
    scope = tmp_path / "scope"
    assert publish_build(tmp_path / "room" / "build", scope) == ["k1"]
    assert sorted(p.name for p in (scope / "objects" / "k1").iterdir()) == ["done", "ext.so"]
    (tmp_path / "room2").mkdir()
    os.symlink(tmp_path / "room" / "build", tmp_path / "room2" / "build")
    assert publish_build(tmp_path / "room2" / "build", tmp_path / "scope2") == []


def test_build_output_is_ours_read_only_and_scoped_to_the_source(cpp_cold):
    """The room builds in its own folder; the trusted side copies the finished objects into the
    candidate source's own cache scope, owned by the server's user and read-only."""
    import stat

    from stitch_mcp.check import candidate_scope

    source = Path(prog("cand_relu_cpp")).read_text()
    scope = candidate_scope(get_settings().build_dir, source)
    sos = list((scope / "objects").glob("*/*.so"))
    assert sos, list(scope.rglob("*"))
    for so in sos:
        st = so.stat()
        assert st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        assert not so.parent.stat().st_mode & stat.S_IWUSR
    other = candidate_scope(get_settings().build_dir, source + "\n# changed\n")
    assert other != scope and not other.exists()


def test_baselines_are_timed_in_a_worker_of_their_own_once_no_check_of_the_task_runs():
    """On a GPU the reference's baselines are timed in a worker of their own, started with a
    task's first check; the task's cache keeps them for torch.compile. The worker times them only
    once no check of the task is running: a candidate could otherwise keep the GPU busy outside the
    device lease while they are timed, and every later candidate of the task would look faster."""
    from stitch_mcp import check as check_mod
    from stitch_mcp.check import _cached_baselines, _time_baselines
    from stitch_mcp.config import get_settings
    from stitch_mcp.sources import resolve_task
    from stitch_mcp.store import get_workspace

    def stored(task):
        return _cached_baselines(get_workspace(), task.task_id, get_settings().timing_iters)

    alone = resolve_task(Path(prog("ref_relu")).read_text() + "\n# timed alone\n", None)
    t0 = time.monotonic()
    _time_baselines(alone.source, alone.task_id, False).join()
    took = time.monotonic() - t0
    assert stored(alone)["cpu"]["eager"]["median_ms"] > 0

    busy = resolve_task(Path(prog("ref_relu")).read_text() + "\n# timed once its check has ended\n", None)
    presence = check_mod._task_activity.enter(busy.task_id)  # a check of the task whose candidate still runs
    try:
        thread = _time_baselines(busy.source, busy.task_id, False)
        time.sleep(max(2 * took, 5))
        assert thread.is_alive() and not stored(busy)
    finally:
        presence.leave_after([])
    thread.join(120)
    assert stored(busy)["cpu"]["eager"]["median_ms"] > 0


def test_a_judges_baselines_count_only_where_no_other_check_of_the_task_ran():
    """A check alone on its task lets its judge compile and time torch.compile's baseline; what the
    judge timed is cached and used only where no other check of the task ran from the run stage's
    start to its end (check._TaskActivity's quiet marks), another's candidate could have slowed it."""
    from stitch_mcp.check import _TaskActivity

    activity = _TaskActivity()
    mine = activity.enter("t")
    mark = activity.quiet_mark(mine)
    assert mark is not None and activity.quiet_since(mine, mark)
    other = activity.enter("t")  # starts and ends while the judge times: not quiet any more
    other.leave_after([])
    assert not activity.quiet_since(mine, mark)
    assert activity.quiet_mark(mine) is not None  # alone again: a later run stage may time them
    busy = activity.enter("t")
    assert activity.quiet_mark(mine) is None and not activity.quiet_since(mine, None)
    busy.leave_after([])
    elsewhere = activity.enter("another task")  # other tasks' checks do not count
    assert activity.quiet_since(mine, activity.quiet_mark(mine))
    elsewhere.leave_after([])


# ------------------------------------------------------------------ build failures


def test_cpp_compile_error_maps_to_candidate_line():
    r = check("ref_relu", "cand_compile_error_cpp")
    assert r.verdict == "error" and r.error_kind == "compile_error", r.summary
    d = r.build.diagnostics[0]
    assert d.severity == "error" and d.candidate_line == 11 and d.source_line == "int* p = v;"
    assert d.file == "main.cpp" and d.line
    assert "candidate line 11" in r.reasons[0]
    assert r.build.log_tail


def test_cuda_candidate_compiles_and_needs_gpu():
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    r = check("ref_relu", "cand_cuda_plain")
    assert r.verdict == "error" and r.error_kind == "needs_gpu", r.summary
    assert r.build.ok and r.build.extensions[0].with_cuda
    assert "needs a GPU" in r.summary
    r2 = check("ref_relu", "cand_cuda_plain")  # compiled before: no build worker at all
    assert r2.error_kind == "needs_gpu" and r2.build.cached


def test_cuda_built_at_construction_needs_gpu_from_the_build_stage():
    """The build stage's rehearsal compiles CUDA code built on first use as far as this host allows:
    `needs_gpu` comes from the build, and the run stage does not compile it again."""
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    r = check("ref_relu", "cand_cuda_plain_lazy")
    assert r.verdict == "error" and r.error_kind == "needs_gpu", r.summary
    assert [e.name for e in r.build.extensions] == ["relu_plain_lazy"] and r.build.extensions[0].with_cuda
    assert "run" not in r.stage_seconds, r.stage_seconds
    r2 = check("ref_relu", "cand_cuda_plain_lazy")  # compiled before: no build room at all
    assert r2.error_kind == "needs_gpu" and r2.build.cached


@pytest.mark.slow  # compiles the binding twice, the second time against all of torch/extension.h: 268 s
# of the CPU suite's 38 min on a loaded 2-core host (the slowest test by 2x), close to a 300 s timeout
def test_binding_needing_more_than_per_operator_headers_is_rebuilt_with_the_real_header():
    """A C++ candidate calling at::parallel_for: the first build misses the declaration, the
    binding file climbs to torch/extension.h, and the candidate passes."""
    r = check("ref_relu", "cand_relu_cpp_parallel")
    assert r.verdict == "pass", r.summary
    assert r.build.extensions[0].binding_header == "torch/extension.h"


def test_cpp_candidate_binds_against_per_operator_headers():
    r = check("ref_relu", "cand_relu_cpp")
    assert r.verdict == "pass" and r.build.extensions[0].binding_header == "ATen per-operator", r.summary


@pytest.mark.timeout(120)  # an nvcc build: 11 s alone, 23 s beside another test on 2 cores
def test_cuda_kernel_file_compiles_against_per_operator_headers():
    """`#include <torch/extension.h>` in a kernel file compiles as the Tensor class plus the ATen
    operators it calls (a third of the nvcc time); the candidate still builds and is reported as
    needing a GPU."""
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    r = check("ref_relu", "cand_cuda_torch")
    assert r.error_kind == "needs_gpu" and r.build.ok, r.summary
    assert r.build.extensions[0].kernel_header == "ATen per-operator"


@pytest.mark.slow
def test_cuda_kernel_file_needing_the_full_header_is_rebuilt_with_it():
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    r = check("ref_relu", "cand_cuda_full_header")
    assert r.error_kind == "needs_gpu" and r.build.ok, r.summary
    assert r.build.extensions[0].kernel_header == "torch/extension.h"


def test_cuda_candidate_with_aten_cuda_headers_needs_gpu_not_a_compile_error():
    """The bundled demo candidate includes ATen/cuda/CUDAContext.h, which needs CUDA library headers
    (cusparse.h, ...) that a CPU machine's CUDA install may lack: that is no fault of the candidate."""
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    from stitch_mcp import examples

    r = compile_and_check(reference=examples.read("reference.py"), candidate=examples.read("cuda_fused.py"),
                          timing=False)
    assert r.verdict == "error" and r.error_kind == "needs_gpu", r.summary
    assert "needs a GPU" in r.summary


def test_cuda_compile_error_maps_to_candidate_line():
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    r = check("ref_relu", "cand_cuda_error")
    assert r.verdict == "error" and r.error_kind == "compile_error", r.summary
    d = r.build.diagnostics[0]
    assert d.file == "cuda.cu" and d.candidate_line == 9 and "zero_value" in d.message
    assert "zero_value" in d.source_line
    # a name of its own: the same error against any torch header, so it is not rebuilt with more
    assert r.build.extensions[0].kernel_header == "ATen per-operator"


# ------------------------------------------------------------------ wrong answers


def test_wrong_output_fails_with_trial_details():
    r = check("ref_relu", "cand_wrong")
    assert r.verdict == "fail"
    t = r.correctness.trials[0]
    assert not t.ok and t.max_abs_err > 1e-3 and 0 < t.mismatch_fraction < 1
    assert t.first_mismatch_index is not None and len(t.first_mismatch_index) == 2
    assert "wrong output in trial" in r.reasons[0]


@pytest.mark.parametrize("ref,cand", [("ref_tril_mm", "cand_tril_mm_triangles"), ("ref_sym_mm", "cand_sym_mm_transposed"),
                                      ("ref_hinge", "cand_hinge_signs"), ("ref_row_scale", "cand_row_scale_per_row"),
                                      ("ref_soft_targets", "cand_soft_targets_summing_to_one"),
                                      ("ref_dropout_mask", "cand_dropout_mask_select"),
                                      ("ref_float_index", "cand_float_index_rounded")])
def test_other_distributions_keep_what_the_task_promises_of_its_inputs(ref, cand):
    """No false alarm: a candidate that uses what the task's inputs promise (triangular or symmetric
    matrices, targets of -1 and 1, as KernelBench's level 1 draws them; a column repeated along a
    row; soft targets summing to one along the second dimension; a dropout's mask of 0 and 1.25;
    float indices, whole numbers) passes the normal and heavy-tailed trials, which keep the task's
    zeros, symmetry, labels, probabilities, patterns and whole numbers (they redrew every element,
    and these failed)."""
    r = check(ref, cand)
    assert r.verdict == "pass", r.summary
    assert {t.inputs for t in r.correctness.trials} == {"task", "normal", "heavy_tailed"}, r.correctness.trials


def test_inputs_of_a_few_values_keep_their_pattern_and_labels_keep_their_values():
    """Redrawn for the normal and heavy-tailed trials: labels (whole numbers) stay the task's; a
    column repeated along a row gets new values in the same pattern (kept whole, a clamp on it went
    unseen); a triangle keeps its zeros and a symmetric matrix its symmetry."""
    import torch

    from stitch_mcp.correctness import distribute

    column, labels = torch.randn(4, 1).repeat(1, 16), torch.randint(0, 2, (100,)).float() * 2 - 1
    triangle, sym = torch.tril(torch.rand(8, 8)), torch.randn(8, 8)
    for kind in ("normal", "heavy_tailed"):
        c, lab, tri, s = distribute([column, labels, triangle, sym + sym.T], kind, 7, "cpu")
        assert torch.equal(lab, labels)
        assert not torch.equal(c, column) and bool((c == c[:, :1]).all()), c
        below = torch.ones(8, 8, dtype=torch.bool).tril()
        assert torch.equal(tri, tri.tril()) and bool((tri[below] != 0).all()) and torch.equal(s, s.T)


@pytest.mark.parametrize("ref,cand", [("ref_scale", "cand_clamp_range"), ("ref_row_scale", "cand_row_scale_clamped"),
                                      ("ref_clamp_in_place", "cand_clamp_in_place_missing")])
def test_heavy_tailed_inputs_catch_range_limited_candidate(ref, cand):
    """Also where the input clamped is a few values repeated in a pattern: its new values reach as far
    out as a redraw of every element would (kept as the task's, the clamp passed: red team); and where
    the reference clamps its input in place only past the task's range, which its first call did not
    show (it clamped the judge's own inputs, and the candidate leaving the clamp out passed)."""
    r = check(ref, cand)
    assert r.verdict == "fail", r.summary
    failed = {t.inputs for t in r.correctness.trials if not t.ok}
    assert "heavy_tailed" in failed
    assert all(t.ok for t in r.correctness.trials if t.inputs == "task" and t.weights == "task")


@pytest.mark.parametrize("ref,cand", [("ref_linear", "cand_linear_frozen"), ("ref_linear", "cand_linear_frozen_renamed"),
                                      ("ref_linear", "cand_linear_frozen_beside_copy"),
                                      ("ref_linear_gain", "cand_linear_gain_frozen"),
                                      ("ref_tied_head", "cand_tied_head_frozen"),
                                      ("ref_two_linears", "cand_two_linears_copy_frozen"),
                                      ("ref_twin_eyes", "cand_twin_eyes_merged"),
                                      ("ref_complex_filter", "cand_complex_filter_frozen")])
def test_reinitialised_weights_catch_frozen_weights(ref, cand):
    """Also where ModelNew's module has another name than Model's (its weights found by the values
    they were built with), where it keeps a second copy of them, for a one-element parameter, for a
    weight Model ties under two names (an embedding and its head), where a copy of one weight
    under another's name would have the judge take it for a move of the first, and where one
    renamed tensor stands for two of Model's parameters that are equal as built (two identity
    matrices), and for a complex parameter (perturbed as real ones are)."""
    r = check(ref, cand)
    assert r.verdict == "fail", r.summary
    bad = [t for t in r.correctness.trials if not t.ok]
    assert bad and all(t.weights == "reinit" for t in bad)


@pytest.mark.parametrize("ref,cand,kept", [("ref_linear", "cand_linear_renamed", ""),
                                           ("ref_linear", "cand_linear_packed_copy", ""),
                                           ("ref_linear", "cand_linear_transposed", "linear.weight"),
                                           ("ref_two_norms", "cand_two_norms_renamed", "norm_in.weight"),
                                           ("ref_linear_norm", "cand_linear_norm_with_mask", "ln.weight"),
                                           ("ref_two_linears", "cand_two_linears_built_swapped", ""),
                                           ("ref_two_linears", "cand_two_linears_built_reversed", ""),
                                           ("ref_two_linears", "cand_two_linears_extra_first", ""),
                                           ("ref_conv_scale", "cand_conv_scale_folded_in_forward", ""),
                                           ("ref_conv_scale", "cand_conv_scale_seed_shifted", ""),
                                           ("ref_twin_eyes", "cand_twin_eyes_renamed", ""),
                                           ("ref_gated_branch", "cand_gated_branch_reversed", ""),
                                           ("ref_linear", "cand_linear_uninitialised", ""),
                                           ("ref_complex_filter", "cand_complex_filter", "")])
def test_reinitialised_weights_reach_renamed_and_restored_parameters(ref, cand, kept):
    """No false alarm: honest candidates that renamed the reference's parameters, compute with a copy
    of one, store a weight transposed, keep a mask of ones of their own beside a renamed LayerNorm,
    build two layers the other way round than their names say (KernelBench-correct from the same
    seed), or build them the other way round, or a module of their shape first, or draw a parameter
    of their own first, and apply them by name (correct with the weights shared by name; also where
    only the trial with re-initialised weights tells the two ways apart: a branch gated by a zero),
    leave their parameters uninitialised, or fold a divisor into a weight on every call, pass every
    trial, the one with re-initialised weights included. A parameter ModelNew holds by no name of Model's nor by values of its own
    (transposed; a LayerNorm's ones and zeros) keeps the task's values in both, and the trial says
    which. Timing then runs on the task's weights again, renamed
    ones included, and weights fallen back to by name: the timed outputs check out (timed for a few
    of them: each costs seconds)."""
    timed = cand in ("cand_linear_renamed", "cand_linear_transposed", "cand_two_linears_built_reversed")
    r = check(ref, cand, timing=timed)
    assert r.verdict == "pass", r.summary
    assert ("timed_outputs" in r.integrity.checks_run) is timed and not codes(r), r.integrity.findings
    last = r.correctness.trials[-1]
    assert last.weights == "reinit", last
    said = " ".join(last.problems)
    assert (said.startswith(kept) and "kept the task's values" in said) if kept else "kept" not in said, last.problems


def test_weights_shared_by_name_where_the_values_as_built_compute_wrong():
    """Where ModelNew's same-name tensors hold others of Model's values as built, the weights are
    shared by those values first (as KernelBench, which shares none, has them); where the first
    trial fails so and passes with them by name, the names stand and the trial says so."""
    r = check("ref_two_linears", "cand_two_linears_built_reversed")
    assert r.verdict == "pass", r.summary
    said = " ".join(r.correctness.trials[0].problems)
    assert "weights shared by Model's names: ModelNew's fc1.bias, fc1.weight" in said, said
    assert not any(t.problems for t in r.correctness.trials[1:]), r.correctness.trials
    r = check("ref_two_linears", "cand_two_linears_built_swapped")
    assert r.verdict == "pass" and not r.correctness.trials[0].problems, r.correctness.trials[0]


def test_a_weight_changed_as_modelnew_builds_it_is_told_apart_from_a_wrong_computation():
    """A candidate that folds a divisor into its convolution in place at construction (a common
    rewrite of KernelBench's level 2) is right on the values it built, as KernelBench builds it, and
    wrong with Model's weights loaded by name, which is how the judge gives them: it fails, and the
    first trial, run once more on the values it built, says why (before, the diagnosis named the
    computation itself)."""
    r = check("ref_conv_scale", "cand_conv_scale_folded_at_init")
    assert r.verdict == "fail", r.summary
    first = r.correctness.trials[0]
    assert first.right_as_built and "right with the values ModelNew builds for conv.weight, conv.bias" in first.problems[0]
    assert "it changes its parameters as it builds them" in r.summary, r.summary


@pytest.mark.parametrize("ref,cand,cause", [
    ("ref_two_linears", "cand_two_linears_wrong_second_call", "gives other outputs when made again"),
    ("ref_linear", "cand_linear_clamps_once_loaded", ""),
])
def test_other_ways_of_sharing_the_weights_are_no_second_chance(ref, cand, cause):
    """A failed trial falls back to another way of sharing the weights only where the same call fails
    the same way again: a candidate wrong on its second call (built so that its weights can be
    shared two ways) fails and is told why. And the weights a candidate builds itself are never what
    it is judged on: one that builds its bias one ulp off and clamps its input once weights are
    loaded into it fails the trials on the task's weights too (red team, fifth round)."""
    r = check(ref, cand)
    assert r.verdict == "fail", r.summary
    assert cause in r.summary, r.summary


def test_weights_out_of_reach_of_the_reinitialised_trial_are_named():
    """A candidate whose state_dict holds none of Model's parameters (kept in a plain list) cannot be
    given re-initialised weights: it stays right for any seed it is built with, as KernelBench
    builds it, so it passes, but with a warning that loaded weights would not reach it."""
    r = check("ref_linear", "cand_linear_hidden_weights")
    assert r.verdict == "pass", r.summary
    assert r.correctness.trials[-1].weights == "task"
    assert "weights not re-initialised" in " ".join(r.correctness.trials[-1].problems)
    warned = [f for f in r.integrity.findings if f.code == "weights_unreached"]
    assert warned and warned[0].severity == "warning", r.integrity.findings
    assert "weights_unreached" not in {f.code for f in check("ref_linear", "cand_linear_renamed").integrity.findings}
    # one parameter out of reach (laid out anew here; a weight kept outside state_dict beside a registered
    # bias passed with no finding at all: red team, fourth round): the warning names it
    r = check("ref_linear", "cand_linear_transposed")
    warned = [f for f in r.integrity.findings if f.code == "weights_unreached"]
    assert r.verdict == "pass" and warned and warned[0].severity == "warning", r.integrity.findings
    assert warned[0].message.startswith("linear.weight of Model's parameters kept the task's values"), warned


# ------------------------------------------------------------------ integrity findings


@pytest.mark.parametrize("ref,cand,code", [
    ("ref_relu", "cand_mutate", "input_mutation"),
    ("ref_scale", "cand_alias", "output_aliases_input"),
    ("ref_relu", "cand_empty", "unwritten_output"),
    ("ref_tiny", "cand_zeros", "tolerance_exploit"),
    ("ref_tiny", "cand_zeros", "constant_output"),
    ("ref_tiny_second", "cand_zeros_second", "tolerance_exploit"),  # every output is looked at, not the first only
    ("ref_tiny_second", "cand_zeros_second", "constant_output"),
    ("ref_relu", "cand_subclass", "tensor_subclass"),
    ("ref_add_in_place", "cand_add_in_place_scribbles", "input_mutation"),  # the reference writes there, not that
])
def test_integrity_finding(ref, cand, code):
    r = check(ref, cand)
    assert r.verdict == "fail", r.summary
    assert code in codes(r), (code, r.integrity.findings)
    assert not r.integrity.ok


@pytest.mark.parametrize("ref,cand,warned", [("ref_pass_mask", "cand_pass_mask", {"output_aliases_input"}),
                                             ("ref_add_in_place", "cand_add_in_place",
                                              {"input_mutation", "output_aliases_input"}),
                                             ("ref_clamp_in_place", "cand_clamp_in_place_mirror", {"input_mutation"})])
def test_a_candidate_mirroring_what_the_reference_does_to_its_inputs_is_only_warned(ref, cand, warned):
    """A reference that passes an input through as an output, or works in place on its input: the
    candidate that does the same is right (KernelBench passes it) and gets warnings, not errors."""
    r = check(ref, cand)
    assert r.verdict == "pass", r.summary
    assert {f.code for f in r.integrity.findings if f.severity == "warning"} >= warned, r.integrity.findings
    assert all("the reference does too" in f.message for f in r.integrity.findings if f.code in warned)


@pytest.mark.parametrize("ref,cand", [("ref_norm_and_mean", "cand_norm_and_mean_by_hand"),
                                      ("ref_softmax_and_sums", "cand_softmax_and_sums_f64")])
def test_an_output_that_is_rounding_noise_or_constant_in_exact_arithmetic_is_no_exploit(ref, cand):
    """Every output is looked at for the near-zero exploit and for not following its inputs; an honest
    one that is the reference's rounding noise about zero (the mean of a normalisation), or exactly
    constant where the reference's float32 moves in its last bit (softmax row sums in float64), was
    called an exploit (red team, 2026-11-27)."""
    r = check(ref, cand)
    assert r.verdict == "pass" and not r.integrity.findings, (r.summary, r.integrity.findings)


def test_the_candidate_cannot_reach_the_reference_or_the_judge():
    """A candidate that spies on the reference's module (to return its output) finds nothing there:
    the reference runs in the judge, another process. Wrong output, a plain fail."""
    r = check("ref_relu", "cand_stash")
    assert r.verdict == "fail" and not all(t.ok for t in r.correctness.trials), r.summary


def test_patching_its_own_timer_does_not_change_the_time():
    """time.perf_counter patched to 0 in the candidate's room: the room reports 0 ms, the judge's
    clock does not agree, and the candidate is timed at the judge's estimate."""
    r = check("ref_relu", "cand_patch_timer", timing=True)
    assert r.verdict == "pass", r.summary  # its output is right; only its own clock lies
    assert r.timing.candidate.median_ms > 0
    warned = {f.code for f in r.integrity.findings}
    assert "timing_contradicted" in warned, r.integrity.findings


def test_a_thread_in_the_room_changes_nothing():
    """A background thread lives in the candidate's room, not in the judge: it can neither see
    nor touch the comparison or the clock, so an otherwise right candidate passes."""
    r = check("ref_relu", "cand_thread", timing=True)
    assert r.verdict == "pass", r.summary


def test_caching_across_timed_calls_is_caught():
    r = check("ref_relu", "cand_cache_calls", timing=True)
    assert all(t.ok for t in r.correctness.trials)  # honest for the correctness calls
    assert r.verdict == "fail" and "timed_output_mismatch" in codes(r), r.summary


# ------------------------------------------------------------------ bad input and crashes


@pytest.mark.parametrize("cand,kind,words", [
    ("cand_no_modelnew", "interface", "no class ModelNew"),
    ("cand_syntax", "syntax_error", "line 6"),
    ("cand_import_error", "import_error", "definitely_not_a_module"),
    ("cand_ctor_arity", "interface", "constructor"),
    ("cand_forward_arity", "interface", "forward"),
    ("cand_segfault", "segfault", "segmentation fault"),
    ("cand_exit", "os_exit", "without reporting a result"),
    ("cand_flood", "output_flood", "flooded"),
    ("cand_host_oom", "host_oom", "out of memory"),
    ("cand_illegal_access", "illegal_memory_access", "out of bounds"),
])
def test_bad_candidates_give_clear_errors(cand, kind, words):
    r = check("ref_relu", cand)
    assert r.verdict == "error" and r.error_kind == kind, (r.error_kind, r.summary)
    assert words in r.reasons[0], r.reasons
    assert r.summary.splitlines()[1].startswith("Fix first:")
    assert get_workspace().latest_report("check", candidate_id=r.candidate_id)["error_kind"] == kind
    assert r.route is not None and r.route.decision in ("fix", "replan")
    assert not workers_running()


@pytest.mark.timeout(120)  # its own limit is SHORT_RUN_TIMEOUT_S + 25 s
def test_hang_times_out_and_is_killed(short_run_timeout):
    t0 = time.monotonic()
    r = check("ref_relu", "cand_hang")
    assert r.verdict == "error" and r.error_kind == "timeout", r.summary
    assert "first_call" in r.reasons[0], r.reasons  # its first call runs before the trials
    # the room's deadline or the worker's limit, whichever ends it first: both name the limit
    assert f"timed out after {SHORT_RUN_TIMEOUT_S} s" in r.reasons[0], r.reasons
    elapsed = time.monotonic() - t0
    # the 25 s margin is for what comes after the run timeout: the kill, the clean-up, the report
    record_wait("a hung check ends, past its run_timeout_s", 25, elapsed - SHORT_RUN_TIMEOUT_S)
    assert elapsed < SHORT_RUN_TIMEOUT_S + 25, f"{elapsed:.0f} s; stages {r.stage_seconds}"
    assert not workers_running()


def test_a_room_past_its_deadline_names_the_limit(tmp_path):
    """The judge's own deadline for the room (it can run out before the worker's limit, which does not
    count the waits for memory and the device): the reason names the limit, as the worker's does."""
    from stitch_mcp import worker
    from stitch_mcp.check import _limits, run_spec

    settings = get_settings()
    reference, source = ((PROGRAMS / f"{n}.py").read_text() for n in ("ref_relu", "cand_hang"))
    spec = run_spec(reference, source, Path(settings.build_dir).expanduser(), settings, trials=2, timing=False,
                    compare_compile=False, limits=_limits(60, False))
    spec["room_timeout_s"] = 6
    res = worker.run_worker("run", spec, workdir=tmp_path, timeout_s=60)
    assert res.kind == "timeout" and res.result.error.kind == "timeout", (res.kind, res.message)
    assert res.message.startswith("timed out after 6 s waiting for the candidate"), res.message


def test_flood_never_reaches_our_stdout(capfd):
    r = check("ref_relu", "cand_flood")
    out, _ = capfd.readouterr()
    assert r.error_kind == "output_flood"
    assert "debug" not in out
    assert "debug" in r.output and len(r.output) <= 4100


def test_reference_without_get_inputs_is_rejected():
    with pytest.raises(UserError, match="get_inputs"):
        check("ref_no_get_inputs", "cand_relu_torch")


def test_reference_whose_get_inputs_fails():
    r = check("ref_bad_inputs", "cand_relu_torch")
    assert r.verdict == "error" and r.error_kind == "reference_error"
    assert "cannot make inputs" in r.reasons[0]


@pytest.mark.slow
def test_torch_compile_baseline_on_cpu():
    r = check("ref_scale", "cand_scale_ok", timing=True, compare_compile=True)
    assert r.verdict == "pass", r.summary
    # torch.compile works on the CPU (inductor's C++ backend, with the compiler this suite builds with)
    assert r.timing.compiled is not None, r.timing.compile_note
    assert r.timing.compile_note.startswith("torch.compile (default mode)"), r.timing.compile_note
    assert r.speedup_vs_compile and r.speedup_vs_compile > 0


def test_the_room_computes_fp32_as_the_reference_does():
    """TF32 off in the candidate's room as in the judge's reference: a kept nn.Conv2d is not
    silently less precise than the reference it is compared with."""
    r = check("ref_relu", "cand_relu_reads_tf32")
    assert r.verdict == "pass", r.summary


def test_a_check_cancelled_while_compiling_the_baseline_is_not_judged_again():
    """A judge that crashed compiling torch.compile's baseline is judged again without it; one the
    caller cancelled there is not (the second worker would be killed as it starts)."""
    from stitch_mcp.check import _compile_crashed
    from stitch_mcp.events import COMPILING_BASELINE
    from stitch_mcp.outcomes import WorkerResult

    assert _compile_crashed(WorkerResult(status="crash", kind="segfault", stage=COMPILING_BASELINE))
    assert not _compile_crashed(WorkerResult(status="cancelled", kind="cancelled", stage=COMPILING_BASELINE))
    assert not _compile_crashed(WorkerResult(status="crash", kind="segfault", stage="timing"))
