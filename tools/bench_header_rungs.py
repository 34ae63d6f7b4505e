"""The header rungs on the wrapper corpus (tests/programs/wrappers): does each LLM-style wrapper
get the same outcome from the light per-operator rung (climbing as a build does) as from the real
torch/extension.h, how many build on the first rung, and what the light rung saves. Not a test
(tests/test_wrapper_corpus.py runs the same comparison).

    python tools/bench_header_rungs.py                     # every source on every rung, with times
    python tools/bench_header_rungs.py --mode check        # the ladder and the full header only
    python tools/bench_header_rungs.py --mode ladder       # the ladder only (the hit rate, on a slow host)
    python tools/bench_header_rungs.py --only div_scalar --json out.json

Each source is compiled to an object the way the CPU path compiles load_inline's generated files
(stitch_mcp.build.compile.compile_on_rungs): a .cu file as the kernel unit (cuda.cu, nvcc), a .cpp file as
the binding unit (main.cpp, the host compiler, with `// functions:` bound). `// expect: error`
marks a source with a genuine error of its own (it must fail on every rung, and not climb).
Times are wall and CPU (user + system of the compiler and its subprocesses) seconds, one compile
at a time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "programs" / "wrappers"
FULL = "torch/extension.h"


@dataclass
class Wrapper:
    name: str
    unit: str  # 'kernel' (.cu) or 'binding' (.cpp)
    source: str
    functions: list[str] | None
    expect_ok: bool
    style: str


def load_wrapper(path: Path) -> Wrapper:
    text = path.read_text()
    style = re.search(r"^// style: (.*)$", text, re.M)
    funcs = re.search(r"^// functions: (.*)$", text, re.M)
    functions = None
    if funcs and funcs[1].strip() != "none":
        functions = [f.strip() for f in funcs[1].split(",")]
    return Wrapper(name=path.stem, unit="kernel" if path.suffix == ".cu" else "binding", source=text,
                   functions=functions, expect_ok="// expect: error" not in text, style=style[1] if style else "")


def corpus(only: list[str] | None = None) -> list[Wrapper]:
    paths = sorted([*CORPUS.glob("*.cu"), *CORPUS.glob("*.cpp")])
    return [load_wrapper(p) for p in paths if not only or p.stem in only]


def ladder_of(runs: list, using_torch: bool) -> list:
    """The compiles a build makes, out of compiles on every rung: up to the first that succeeds
    or that fails for a reason that does not climb."""
    from stitch_mcp.build.headers import lacks_torch_declaration

    taken = []
    for run in runs:
        taken.append(run)
        if run.ok or not lacks_torch_declaration(run.output, using_torch):
            break
    return taken


def measure(w: Wrapper, root: Path, mode: str) -> dict:
    """{'ladder': [compiles], 'full': compile on torch/extension.h, 'every': [compiles] or None}"""
    from stitch_mcp.build.compile import compile_on_rungs
    from stitch_mcp.build.headers import uses_torch_namespace

    work = root / "work" / w.name
    if mode == "every":
        every = compile_on_rungs(root, work, w.unit, [w.source], w.functions, which="every")
        return {"ladder": ladder_of(every, uses_torch_namespace([w.source])), "full": every[-1], "every": every}
    ladder = compile_on_rungs(root, work, w.unit, [w.source], w.functions, which="ladder")
    if mode == "ladder":
        return {"ladder": ladder, "full": None, "every": None}
    full = ladder[-1] if ladder[-1].label == FULL else \
        compile_on_rungs(root, work, w.unit, [w.source], w.functions, which="full")[0]
    return {"ladder": ladder, "full": full, "every": None}


def row(w: Wrapper, m: dict) -> dict:
    ladder, full = m["ladder"], m["full"] or m["ladder"][-1]  # --mode ladder: the ladder's own outcome
    return {"name": w.name, "unit": w.unit, "style": w.style, "expect_ok": w.expect_ok,
            "first_rung": ladder[0].label, "first_rung_ok": ladder[0].ok, "ladder_ok": ladder[-1].ok,
            "ladder_stop": ladder[-1].label, "full_ok": full.ok, "same": ladder[-1].ok == full.ok,
            "ladder_wall_s": round(sum(r.wall_s for r in ladder), 2), "ladder_cpu_s": round(sum(r.cpu_s for r in ladder), 2),
            "full_wall_s": full.wall_s, "full_cpu_s": full.cpu_s,
            "rungs": [{k: v for k, v in asdict(r).items() if k != "output"} for r in (m["every"] or ladder)],
            "errors": [ln for r in ladder for ln in r.output.splitlines() if "error" in ln][:4]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("every", "check", "ladder"), default="every")
    ap.add_argument("--only", nargs="*", help="source names (file stems) to run")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--root", help="folder for stand-in headers and objects (default: a temporary one)")
    ap.add_argument("--jobs", type=int, default=1, help="sources compiled at once (times are then shared-CPU times)")
    args = ap.parse_args(argv)
    root = Path(args.root or tempfile.mkdtemp(prefix="rungs-"))
    rows = []
    wrappers = corpus(args.only)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # each compile is a subprocess of its own
        measured = pool.map(lambda w: (w, measure(w, root, args.mode)), wrappers)
        for w, m in measured:
            rows.append(row(w, m))
            r = rows[-1]
            times = "  ".join(f"{x['label']}: {'ok' if x['ok'] else 'FAIL'} {x['wall_s']:.1f}s wall {x['cpu_s']:.1f}s cpu"
                              for x in r["rungs"])
            flag = "" if r["same"] and r["ladder_ok"] == w.expect_ok else "   <-- MISMATCH"
            print(f"{w.name:24s} {times}{flag}", flush=True)
    hits = sum(r["first_rung_ok"] for r in rows)
    builds = sum(r["full_ok"] for r in rows)
    same = sum(r["same"] for r in rows)
    ladder_cpu, full_cpu = sum(r["ladder_cpu_s"] for r in rows), sum(r["full_cpu_s"] for r in rows)
    ladder_wall, full_wall = sum(r["ladder_wall_s"] for r in rows), sum(r["full_wall_s"] for r in rows)
    print(f"\n{len(rows)} sources: same outcome as torch/extension.h for {same}; {builds} build with it; "
          f"{hits} of {builds} build on the first rung ({hits / max(builds, 1):.0%})")
    print(f"ladder (what a build compiles) {ladder_wall:.0f} s wall / {ladder_cpu:.0f} s cpu; "
          f"torch/extension.h alone {full_wall:.0f} s wall / {full_cpu:.0f} s cpu; "
          f"saved {full_cpu - ladder_cpu:.0f} s cpu ({(full_cpu - ladder_cpu) / max(full_cpu, 1e-9):.0%})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if same == len(rows) and all(r["ladder_ok"] == r["expect_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
