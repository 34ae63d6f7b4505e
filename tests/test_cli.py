"""The `stitch-mcp` command as a subprocess: exit statuses scripts can trust, help that lists the
settings once and explains every argument, progress printed once, and `serve` in a terminal saying
what it waits for."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "stitch_mcp", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)


def test_help_lists_settings_once_and_explains_every_argument():
    top = _cli("--help")
    assert top.returncode == 0
    assert top.stdout.count("--data-dir") == 1 and "settings (also STITCH_<NAME>" in top.stdout
    assert "0 pass, 1 fail, 2 error" in top.stdout
    check = _cli("check", "--help")
    assert check.returncode == 0
    assert "--data-dir" not in check.stdout and "--spare-workers" not in check.stdout
    assert "0 pass, 1 fail, 2 error" in check.stdout


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                yield from ((f"{name} {n}", p) for n, p in _subparsers(sub))


def test_every_command_and_argument_has_help_text():
    import argparse

    from stitch_mcp.cli import build_parser

    parser = build_parser()
    commands = dict(_subparsers(parser))
    assert {"serve", "doctor", "demo", "eval", "check", "rubric", "search", "profile-ref", "profile-kernel",
            "index", "index build", "index add"} <= set(commands)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert all(choice.help for choice in action._choices_actions)
    for name, sub in commands.items():
        for action in sub._actions:
            if action.dest.startswith("setting_"):
                assert action.help == argparse.SUPPRESS, (name, action.dest)  # listed once, at the top
            elif not isinstance(action, argparse._SubParsersAction):
                assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_settings_work_after_the_command():
    # a bad value of a setting given after the subcommand is read (and refused) like one before it
    result = _cli("check", str(PROGRAMS / "ref_relu.py"), str(PROGRAMS / "cand_syntax.py"), "--trials", "0")
    assert result.returncode == 2 and "bad setting" in result.stderr and "trials" in result.stderr


def test_check_error_exits_2_and_progress_prints_once():
    result = _cli("check", str(PROGRAMS / "ref_relu.py"), str(PROGRAMS / "cand_syntax.py"), "--no-timing")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "verdict: error" in result.stdout
    progress = [line for line in result.stderr.splitlines() if "checking the candidate" in line]
    assert len(progress) == 1, result.stderr


def test_bad_input_exits_2():
    result = _cli("check", "/nonexistent/ref.py", str(PROGRAMS / "cand_syntax.py"))
    assert result.returncode == 2 and "reference:" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("candidate, status, verdict", [
    ("cand_relu_torch.py", 0, "pass"),
    ("cand_wrong.py", 1, "fail"),
])
def test_check_exit_status_follows_the_verdict(candidate, status, verdict):
    result = _cli("check", str(PROGRAMS / "ref_relu.py"), str(PROGRAMS / candidate), "--no-timing", "--json",
                  timeout=300)
    assert result.returncode == status, result.stderr[-2000:]
    assert f'"verdict": "{verdict}"' in result.stdout


def test_serve_in_a_terminal_says_it_waits_for_a_client():
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "stitch_mcp", "serve"], stdin=terminal, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    os.close(terminal)
    try:
        deadline, err = time.monotonic() + 60, ""
        while "waiting for an MCP client on stdin" not in err and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1)
            if ready:
                err += proc.stderr.readline()
        assert "waiting for an MCP client on stdin" in err, err
    finally:
        proc.kill()
        out, rest = proc.communicate()
        os.close(controller)
    assert out == "", "nothing but the protocol on stdout"
    assert (err + rest).count("waiting for an MCP client") == 1


def test_serve_under_a_client_says_nothing_about_terminals():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "stitch_mcp", "serve"], input="", capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)
    assert "waiting for an MCP client" not in proc.stderr and proc.stdout == ""


def test_serve_refuses_a_wait_out_of_range():
    result = _cli("serve", "--max-wait-s", "5000")
    assert result.returncode == 2 and "--max-wait-s" in result.stderr
