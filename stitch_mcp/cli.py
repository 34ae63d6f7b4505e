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


def _settings_parent() -> argparse.ArgumentParser:
    """--flags for every setting (over STITCH_* variables), accepted before or after the subcommand."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("settings (also STITCH_<NAME> environment variables)")
    for name, field in Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind = field.annotation
        if kind is bool:
            group.add_argument(flag, dest=f"setting_{name}", default=argparse.SUPPRESS,
                               action=argparse.BooleanOptionalAction, help=field.description)
        else:
            group.add_argument(flag, dest=f"setting_{name}", default=argparse.SUPPRESS, metavar=name.upper(),
                               help=field.description)
    return parent


def _progress_printer():
    from stitch_mcp.jobs import Progress

    class StderrProgress(Progress):
        def update(self, done, total=None, message=""):
            super().update(done, total, message)
            total_s = f"/{self.total:g}" if self.total else ""
            print(f"[{self.done:g}{total_s}] {message}", file=sys.stderr, flush=True)

    return StderrProgress()


def _emit(model, as_json: bool) -> None:
    if as_json:
        print(model.model_dump_json(indent=2))
    else:
        print(getattr(model, "summary", "") or model.model_dump_json(indent=2))


def build_parser() -> argparse.ArgumentParser:
    settings = _settings_parent()
    parser = argparse.ArgumentParser(prog="stitch-mcp", parents=[settings],
                                     description="The Verifier of a Plan -> Code -> Verify loop for CUDA kernels, "
                                                 "served over MCP.")
    parser.add_argument("--version", action="version", version=f"stitch-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("serve", parents=[settings], help="run the MCP server (stdio by default)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (non-loopback needs a token)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token", default=None, help="bearer token required over HTTP (or STITCH_AUTH_TOKEN)")

    p = sub.add_parser("doctor", parents=[settings], help="check GPU, driver, compilers, profilers, docs index")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("demo", parents=[settings], help="run the whole loop on a bundled example through a "
                                                         "real MCP client")
    p.add_argument("--out", default=None, help="folder for the reports and images")

    p = sub.add_parser("eval", parents=[settings], help="check many candidates: PROBLEMS_DIR CANDIDATES_DIR")
    p.add_argument("problems_dir")
    p.add_argument("candidates_dir")
    p.add_argument("--out", default="results.jsonl", help="results file (resumed if it exists)")
    p.add_argument("--jobs", type=int, default=2, help="checks at a time (builds overlap; GPU stages never do)")

    p = sub.add_parser("check", parents=[settings], help="compile_and_check REFERENCE CANDIDATE")
    p.add_argument("reference")
    p.add_argument("candidate")
    # --trials, --atol, --rtol are settings (listed below) and apply here
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--parent", default=None, help="candidate id this one was written from (default: the last "
                                                  "candidate of the session, --session / STITCH_SESSION)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("rubric", parents=[settings], help="rubric_score REFERENCE CANDIDATE")
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--feedback", action="append", help="a feedback item the candidate should address")
    p.add_argument("--parent", default=None, help="candidate id this one was written from (its saved feedback "
                                                  "is what skill compliance grades)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("search", parents=[settings], help="search_cuda_docs QUERY")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--kinds", nargs="*")
    p.add_argument("--text", action="store_true", help="include whole texts")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("index", parents=[settings], help="build the documentation index, or add your own documents")
    isub = p.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    q = isub.add_parser("build", parents=[settings], help="bring the index up to date (knowledge cards, the installed "
                                                          "CUDA headers, cuda-bindings, added documents)")
    q.add_argument("--force", action="store_true", help="rebuild everything instead of only what changed")
    q.add_argument("--json", action="store_true")
    q = isub.add_parser("add", parents=[settings], help="index a folder (or file) of Markdown, HTML or text")
    q.add_argument("path")
    q.add_argument("--json", action="store_true")

    p = sub.add_parser("profile-ref", parents=[settings], help="profile_reference REFERENCE")
    p.add_argument("reference")
    p.add_argument("--backend", choices=["auto", "nsys", "torch"], default="auto")
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("profile-kernel", parents=[settings], help="profile_kernel REFERENCE CANDIDATE")
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--kernel-filter")
    p.add_argument("--launch-skip", type=int, default=0)
    p.add_argument("--launch-count", type=int, default=5)
    p.add_argument("--sections", choices=["quick", "full", "source"], default="quick")
    p.add_argument("--json", action="store_true")
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
            from stitch_mcp.server import create_server

            mcp = create_server()
            if getattr(args, "http", False):
                from stitch_mcp.transport import serve_http

                serve_http(mcp, args.host, args.port, args.token or settings.auth_token)
            else:
                mcp.run()
            return 0
        if command == "doctor":
            from stitch_mcp.doctor import run_doctor

            report = run_doctor()
            if args.json:
                print(report.model_dump_json(indent=2))
            else:
                for line in report.lines:
                    fix = f"  -> {line.fix}" if line.fix and line.status != "ok" else ""
                    print(f"{line.status:8} {line.name:22} {line.detail}{fix}")
            return 0 if all(line.status != "missing" or not line.fix.startswith("required")
                            for line in report.lines) else 1
        if command == "eval":
            return _run_eval(args)
        if command == "demo":
            from stitch_mcp.demo import run_demo

            return run_demo(args.out)
        _emit(_run_tool(args), args.json)
        return 0
    except UserError as exc:
        print(f"stitch-mcp {command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
