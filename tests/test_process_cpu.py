"""stitch_mcp.process_cpu: a process tree's CPU time read from outside, and whether the tree kept
to the processes it had (what the judge's batches on a CPU rely on)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from stitch_mcp.process_cpu import TreeCpu, clock_of

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
# waits on stdin, then runs `then`, then waits again: the reading brackets exactly the work
SCRIPT = "import sys\nsys.stdin.readline()\n{then}\nsys.stdout.write('done\\n'); sys.stdout.flush()\nsys.stdin.readline()\n"


def _start(then: str, cpus: set[int] | None = None) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT.format(then=then)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, preexec_fn=_on(cpus))
    time.sleep(0.3)  # the interpreter's start is not what is measured
    return proc


def _run(proc: subprocess.Popen) -> None:
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "done\n"


def _end(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()


def _on(cpus: set[int] | None):
    return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))


def test_a_trees_work_is_read_from_outside_and_a_host_busy_beside_it_adds_nothing():
    core = {max(os.sched_getaffinity(0))}  # the work and two busy loops share one core
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_on(core)) for _ in range(2)]
    proc = _start(BURN.format(s=0.3), core)
    try:
        clock = TreeCpu(proc.pid)
        t0, w0 = clock.read(), time.perf_counter()
        _run(proc)
        used, wall = clock.read() - t0, time.perf_counter() - w0
        assert 0.28 < used < 0.45, used
        assert wall > 1.5 * used, (wall, used)  # it waited for the core: wall time counts that, its CPU time not
        assert clock.whole()
    finally:
        _end(proc)
        for p in busy:
            p.kill()
            p.wait()


@pytest.mark.parametrize("then", [
    # a child that did work and was reaped: its time folded into the parent's (not on its own clock)
    "import subprocess, sys\nsubprocess.run([sys.executable, '-c', " + repr(BURN.format(s=0.1)) + "])",
    # a child still running
    "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])",
])
def test_a_tree_that_started_processes_is_not_whole(then):
    proc = _start(then)
    try:
        clock = TreeCpu(proc.pid)
        _run(proc)
        assert not clock.whole()
    finally:
        for child in __import__("psutil").Process(proc.pid).children(recursive=True):
            child.kill()
        _end(proc)


def test_a_gone_process_or_a_stray_ends_the_reading():
    proc = _start("pass")
    clock = TreeCpu(proc.pid)
    assert clock.whole() and clock.read() >= 0
    # children left re-parented to the reader: one still running, one that exited after the first reading
    assert not TreeCpu(proc.pid, strays=lambda: {12345: False}).whole()
    exits = iter([{}, {12345: True}])
    assert not TreeCpu(proc.pid, strays=lambda: next(exits)).whole()
    assert TreeCpu(proc.pid, strays=lambda: {12345: True}).whole()  # exited before: no work since
    before = clock.read()
    _end(proc)
    assert clock.read() == before  # what it had used before it went
    assert not clock.whole()
    assert clock_of(proc.pid) is None
