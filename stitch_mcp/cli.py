"""The `stitch-mcp` command: serve, doctor, demo, and one subcommand per tool for headless use.

Headless subcommands call the same stage functions as the MCP tools and print the same
structured output (`--json`) or its summary. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from stitch_mcp import __version__
from stitch_mcp.config import Settings, configure
from stitch_mcp.errors import UserError


SETTINGS_NOTE = ("settings: every setting flag listed by `stitch-mcp --help` (or its STITCH_<NAME> environment "
                 "variable) is accepted before or after the command")
CHECK_EXIT = "exit status: 0 pass, 1 fail, 2 error (the candidate's or the command's)"


def _settings_parent(visible: bool) -> argparse.ArgumentParser:
    """--flags for every setting (over STITCH_* variables). Listed once, in the top-level help; each
    subcommand accepts them too (hidden from its usage) so they work before or after the command."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("settings (also STITCH_<NAME> environment variables)")
    for name, field in Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        shown = field.description if visible else argparse.SUPPRESS
        if field.annotation is bool:
            group.add_argument(flag, dest=f"setting_{name}", default=argparse.SUPPRESS,
                               action=argparse.BooleanOptionalAction, help=shown)
        else:
            group.add_argument(flag, dest=f"setting_{name}", default=argparse.SUPPRESS, metavar=name.upper(),
                               help=shown)
    return parent


def _progress_printer():
    from stitch_mcp.jobs import Progress

    class StderrProgress(Progress):
        """Progress printed once, on stderr, instead of logged."""

        def announce(self) -> None:
            total_s = f"/{self.total:g}" if self.total else ""
            print(f"[{self.done:g}{total_s}] {self.message}", file=sys.stderr, flush=True)

    return StderrProgress()


def _emit(model, as_json: bool) -> None:
    if as_json:
        print(model.model_dump_json(indent=2))
    else:
        print(getattr(model, "summary", "") or model.model_dump_json(indent=2))


JSON_HELP = "print the whole structured result as JSON on stdout (default: its summary)"


def _tool_commands(sub, hidden) -> None:
    p = sub.add_parser("check", parents=[hidden], help="compile_and_check: build, prove correct, time a candidate",
                       description="Check a candidate against a reference, as the compile_and_check tool does.",
                       epilog=f"{CHECK_EXIT}. --trials, --atol, --rtol are settings. {SETTINGS_NOTE}.")
    p.add_argument("reference", help="KernelBench reference program (.py path)")
    p.add_argument("candidate", help="candidate program defining ModelNew (.py path)")
    p.add_argument("--no-timing", action="store_true", help="skip timing against eager and torch.compile")
    p.add_argument("--parent", default=None, help="candidate id this one was written from (default: the last "
                                                  "candidate of the session, --session / STITCH_SESSION)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("rubric", parents=[hidden], help="rubric_score: grade a candidate, catch reward hacks",
                       epilog=SETTINGS_NOTE)
    p.add_argument("reference", help="KernelBench reference program (.py path)")
    p.add_argument("candidate", help="candidate program defining ModelNew (.py path)")
    p.add_argument("--feedback", action="append", help="a feedback item the candidate should address (repeatable)")
    p.add_argument("--parent", default=None, help="candidate id this one was written from (its saved feedback "
                                                  "is what skill compliance grades)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("search", parents=[hidden], help="search_cuda_docs: search the offline CUDA documentation",
                       epilog=SETTINGS_NOTE)
    p.add_argument("query", help="an API name (cudaMemcpyAsync) or a question")
    p.add_argument("-k", type=int, default=5, help="number of results (default 5)")
    p.add_argument("--kinds", nargs="*", help="only these kinds: card, header, bindings, user")
    p.add_argument("--text", action="store_true", help="include whole texts")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("profile-ref", parents=[hidden], help="profile_reference: where a reference's time goes",
                       epilog=SETTINGS_NOTE)
    p.add_argument("reference", help="KernelBench reference program (.py path)")
    p.add_argument("--backend", choices=["auto", "nsys", "torch"], default="auto",
                   help="auto: Nsight Systems when it can write a report, else torch.profiler")
    p.add_argument("--iterations", type=int, default=5, help="profiled iterations after warm-up (default 5)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("profile-kernel", parents=[hidden], help="profile_kernel: why a candidate's kernels are slow",
                       epilog=SETTINGS_NOTE)
    p.add_argument("reference", help="KernelBench reference program (.py path)")
    p.add_argument("candidate", help="candidate program defining ModelNew (.py path)")
    p.add_argument("--kernel-filter", help="only kernels whose name contains this (or regex:PATTERN)")
    p.add_argument("--launch-skip", type=int, default=0, help="matching launches to skip first")
    p.add_argument("--launch-count", type=int, default=5, help="matching launches to profile (default 5)")
    p.add_argument("--sections", choices=["quick", "full", "source"], default="quick",
                   help="quick: the main sections; full: all; source: also the hottest source lines")
    p.add_argument("--json", action="store_true", help=JSON_HELP)


def _index_command(sub, hidden) -> None:
    p = sub.add_parser("index", parents=[hidden], help="build the documentation index, or add your own documents",
                       epilog=SETTINGS_NOTE)
    isub = p.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    q = isub.add_parser("build", parents=[hidden], help="bring the index up to date (knowledge cards, the installed "
                                                        "CUDA headers, cuda-bindings, added documents)")
    q.add_argument("--force", action="store_true", help="rebuild everything instead of only what changed")
    q.add_argument("--json", action="store_true", help=JSON_HELP)
    q = isub.add_parser("add", parents=[hidden], help="index a folder (or file) of Markdown, HTML or text")
    q.add_argument("path", help="folder or file to index")
    q.add_argument("--json", action="store_true", help=JSON_HELP)


def build_parser() -> argparse.ArgumentParser:
    hidden = _settings_parent(visible=False)
    parser = argparse.ArgumentParser(prog="stitch-mcp", parents=[_settings_parent(visible=True)],
                                     usage="%(prog)s [settings] [COMMAND] [ARGS]",
                                     description="The Verifier of a Plan -> Code -> Verify loop for CUDA kernels, "
                                                 "served over MCP. Without a command: serve.",
                                     epilog=f"check: {CHECK_EXIT}. Other commands: 0 done, 1 failed, 2 bad input.")
    parser.add_argument("--version", action="version", version=f"stitch-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("serve", parents=[hidden], help="run the MCP server (stdio by default)", epilog=SETTINGS_NOTE)
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (non-loopback needs a token)")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--token", default=None, help="bearer token required over HTTP (or STITCH_AUTH_TOKEN)")
    p.add_argument("--max-wait-s", type=float, default=None, metavar="SECONDS",
                   help="how long a long tool waits for its result when the call gives no max_wait_s (default 45, "
                        "for clients that stay connected); a one-shot client such as the Inspector CLI should "
                        "use e.g. 600 so its single call gets the result instead of 'running'")

    p = sub.add_parser("doctor", parents=[hidden], help="check GPU, driver, compilers, profilers, docs index",
                       epilog=SETTINGS_NOTE)
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("demo", parents=[hidden], help="run the whole loop on a bundled example through a real MCP "
                                                      "client", epilog=SETTINGS_NOTE)
    p.add_argument("--out", default=None, help="folder for the reports and images")

    p = sub.add_parser("eval", parents=[hidden], help="check many candidates: PROBLEMS_DIR CANDIDATES_DIR",
                       epilog=SETTINGS_NOTE)
    p.add_argument("problems_dir", help="folder of KernelBench reference programs")
    p.add_argument("candidates_dir", help="folder of candidates, each named after its problem's file")
    p.add_argument("--out", default="results.jsonl", help="results file (resumed if it exists)")
    p.add_argument("--jobs", type=int, default=2, help="checks at a time (builds overlap; GPU stages never do)")

    _tool_commands(sub, hidden)
    _index_command(sub, hidden)
    return parser


def _run_tool(args: argparse.Namespace) -> Any:
    progress = _progress_printer()
    if args.command == "check":
        from stitch_mcp.check import compile_and_check

        return compile_and_check(reference=args.reference, candidate=args.candidate, timing=not args.no_timing,
                                 parent_candidate_id=args.parent, progress=progress)
    if args.command == "rubric":
        from stitch_mcp.score import rubric_score

        return rubric_score(reference=args.reference, candidate=args.candidate, feedback=args.feedback,
                            parent_candidate_id=args.parent, progress=progress)
    if args.command == "search":
        from stitch_mcp.search import search_cuda_docs

        return search_cuda_docs(query=args.query, k=args.k, kinds=args.kinds, include_text=args.text,
                                progress=progress)
    if args.command == "index":
        from stitch_mcp import search

        if args.index_command == "add":
            return search.add_documents(args.path, progress=progress)
        return search.build_index(force=args.force, progress=progress)
    if args.command == "profile-ref":
        from stitch_mcp.profiling.reference import profile_reference

        return profile_reference(reference=args.reference, backend=args.backend, iterations=args.iterations,
                                 progress=progress)
    if args.command == "profile-kernel":
        from stitch_mcp.profiling.kernel import profile_kernel

        return profile_kernel(reference=args.reference, candidate=args.candidate, kernel_filter=args.kernel_filter,
                              launch_skip=args.launch_skip, launch_count=args.launch_count,
                              sections=args.sections, progress=progress)
    raise AssertionError(args.command)


def _run_eval(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress as Bar

    from stitch_mcp.evaluate import evaluate, summary_table

    console = Console(stderr=True)
    with Bar(console=console, transient=False) as bar:
        task = bar.add_task("evaluating", total=None)

        def on_row(row, done, total):
            bar.update(task, completed=done, total=total,
                       description=f"{row['problem'][:40]}: {row['verdict']}")

        rows, unmatched = evaluate(args.problems_dir, args.candidates_dir, args.out, args.jobs, on_row)
    for name in unmatched:
        console.print(f"[yellow]no problem named {name}: skipped (name it after a file in {args.problems_dir})")
    print(summary_table(rows))
    print(f"results: {args.out}")
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from stitch_mcp.server import DEFAULT_WAIT_S, create_server

    wait = getattr(args, "max_wait_s", None)
    wait = DEFAULT_WAIT_S if wait is None else wait
    if not 0 <= wait <= 3600:
        raise UserError("--max-wait-s: give seconds between 0 and 3600")
    mcp = create_server(default_wait_s=wait)
    if settings.docs_index_warmup:
        from stitch_mcp.search import warm_index_in_background

        warm_index_in_background()
    if getattr(args, "http", False):
        from stitch_mcp.transport import serve_http

        serve_http(mcp, args.host, args.port, args.token or settings.auth_token)
        return 0
    import anyio

    from stitch_mcp.transport import serve_stdio

    if sys.stdin.isatty():  # a person, not a client: say what this is waiting for
        print(f"stitch-mcp {__version__}: waiting for an MCP client on stdin (JSON-RPC); start it from an MCP "
              "client or the Inspector (see the README), or use --http. Ctrl-C stops it.", file=sys.stderr, flush=True)
    anyio.run(serve_stdio, mcp)
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from stitch_mcp.doctor import run_doctor

    report = run_doctor()
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        for line in report.lines:
            fix = f"  -> {line.fix}" if line.fix and line.status != "ok" else ""
            print(f"{line.status:8} {line.name:22} {line.detail}{fix}")
    return 0 if all(line.status != "missing" or not line.fix.startswith("required") for line in report.lines) else 1


def _exit_status(command: str, result: Any) -> int:
    """check: 0 pass, 1 fail, 2 error, so a script can tell them apart; other tools: 0 when done."""
    if command != "check":
        return 0
    return {"pass": 0, "fail": 1}.get(getattr(result, "verdict", None), 2)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    overrides = {k[len("setting_"):]: v for k, v in vars(args).items() if k.startswith("setting_")}
    try:
        settings = configure(**overrides)
    except Exception as exc:  # a bad STITCH_* value or flag
        print(f"stitch-mcp: bad setting: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=settings.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    command = args.command or "serve"
    try:
        if command == "serve":
            return _serve(args, settings)
        if command == "doctor":
            return _doctor(args)
        if command == "eval":
            return _run_eval(args)
        if command == "demo":
            from stitch_mcp.demo import run_demo

            return run_demo(args.out)
        result = _run_tool(args)
        _emit(result, args.json)
        return _exit_status(command, result)
    except UserError as exc:
        print(f"stitch-mcp {command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
