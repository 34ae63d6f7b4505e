"""Reading compiler and linker output: gcc's and nvcc's diagnostic lines, each error with the
lines that say more of it (`_error_blocks`), each failed unit's part of a ninja log
(`_failed_units`), and diagnostics mapped from load_inline's generated files back to the
candidate's own lines (`SourceMap`, `parse_diagnostics`), errors in the candidate's code first.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass, field

GCC_RE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
                    r"(?P<sev>fatal error|error|warning|note): (?P<msg>.*)$")
NVCC_RE = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark)"
                     r"(?: #[\w-]+)?: (?P<msg>.*)$")
LINK_RE = re.compile(r"(undefined reference to [`'](?P<sym>[^'`]+)'|undefined symbol: (?P<sym2>\S+))")
# Errors a missing declaration gives (nvcc's front end and gcc)
_MISSING_DECLARATION = re.compile(r"is undefined|is not a member|has no member|not declared|does not name a"
                                  r"|incomplete type|no instance of|no matching function|has not been declared")
# nvcc's continuation lines that belong to an error's message (not its echo of the source line)
_DETAIL = re.compile(r"^\s+(?:operand types are|argument types are|object type is|types are):")


def _error_blocks(compiler_output: str) -> list[str]:
    """Each error of a compiler's output: '<file>\\t<message>' and its continuation lines that
    say more of it (operand and argument types), not the source echo or notes."""
    blocks: list[str] = []
    current = None
    for line in compiler_output.splitlines():
        m = GCC_RE.match(line) or NVCC_RE.match(line)
        if m:
            current = None
            if "error" in m["sev"]:
                blocks.append(f"{m['file']}\t{m['msg']}")
                current = len(blocks) - 1
        elif current is not None and _DETAIL.match(line):
            blocks[current] += "\n" + line.strip()
        elif not line.startswith(" "):
            current = None
    return blocks


def _failed_units(ninja_output: str) -> dict[str, str]:
    """The compiler output of each failed translation unit in a ninja log ('binding': main.cpp,
    'kernel': cuda.cu); the whole text for both when no unit can be told apart."""
    units: dict[str, str] = {}
    current = None
    for line in ninja_output.splitlines():
        if line.startswith("FAILED:"):
            current = "kernel" if ".cuda.o" in line else "binding" if "main.o" in line else None
            continue
        if line.startswith(("[", "ninja: ")):
            current = None
        if current:
            units[current] = units.get(current, "") + line + "\n"
    return units or {"binding": ninja_output, "kernel": ninja_output}


@dataclass
class Generated:
    """A file load_inline generated from pieces of the candidate's source."""

    path: str
    pieces: list[str]
    kinds: list[str] = field(default_factory=list)  # "implicit", "source", "binding"

    def locate(self, line: int) -> tuple[int, int] | None:
        """(piece index, 0-based line within the piece) of a 1-based line of the file."""
        start = 1
        for i, piece in enumerate(self.pieces):
            n = piece.count("\n") + 1
            if start <= line < start + n:
                return i, line - start
            start += n
        return None


def _demangle(sym: str) -> str:
    try:
        out = subprocess.run(["c++filt", sym], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or sym
    except (OSError, subprocess.SubprocessError):
        return sym


class SourceMap:
    """Maps lines of generated files back to lines of the candidate .py."""

    def __init__(self, candidate_source: str):
        self.lines = candidate_source.splitlines()
        self.constants: list[tuple[int, str]] = []
        try:
            for node in ast.walk(ast.parse(candidate_source)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
                    self.constants.append((node.lineno, node.value))
        except SyntaxError:
            pass
        self.generated: dict[str, Generated] = {}

    def add(self, gen: Generated) -> None:
        self.generated[os.path.basename(gen.path)] = gen

    def candidate_line(self, piece: str, offset: int, text: str) -> int | None:
        want = text.strip()
        for lineno, value in self.constants:
            pos = value.find(piece) if piece else -1
            if pos < 0:
                continue
            line = lineno + value[:pos].count("\n") + offset
            if 0 < line <= len(self.lines) and (not want or self.lines[line - 1].strip() == want):
                return line
        if want:
            hits = [i + 1 for i, ln in enumerate(self.lines) if ln.strip() == want]
            if len(hits) == 1:
                return hits[0]
        return None

    def resolve(self, file: str, line: int | None) -> tuple[str, int | None, str, bool]:
        """(display file, candidate line, source text, in the candidate's own code)."""
        gen = self.generated.get(os.path.basename(file))
        if gen is None or line is None:
            return file, None, "", False
        where = gen.locate(line)
        if where is None:
            return os.path.basename(file), None, "", False
        idx, off = where
        piece = gen.pieces[idx]
        text = piece.split("\n")[off] if off < piece.count("\n") + 1 else ""
        kind = gen.kinds[idx] if idx < len(gen.kinds) else "source"
        if kind == "binding":
            hits = [i + 1 for i, ln in enumerate(self.lines) if "functions" in ln]
            return os.path.basename(file), (hits[0] if hits else None), text, True
        if kind == "implicit":
            return os.path.basename(file), None, text, False
        return os.path.basename(file), self.candidate_line(piece, off, text), text, True


def parse_diagnostics(text: str, smap: SourceMap | None = None, limit: int = 20) -> list[dict]:
    """Compiler/linker output -> diagnostics, errors in the candidate's own code first."""
    found: list[tuple[int, int, dict]] = []
    seen = set()
    for order, raw in enumerate(text.splitlines()):
        line = raw.rstrip()
        m = GCC_RE.match(line) or NVCC_RE.match(line)
        diag = None
        if m:
            sev = m["sev"]
            severity = "error" if "error" in sev else ("warning" if sev == "warning" else "note")
            lineno = int(m["line"])
            col = int(m["col"]) if "col" in m.groupdict() and m["col"] else None
            file, cand_line, src, own = smap.resolve(m["file"], lineno) if smap else (m["file"], None, "", False)
            msg = m["msg"].strip()
            if smap and os.path.basename(m["file"]) == "main.cpp" and own and cand_line is not None \
                    and "PYBIND11_MODULE" not in src and "m.def(" in src:
                msg += " (a name in `functions` must be declared in cpp_sources with that exact name)"
            diag = dict(severity=severity, message=msg, file=os.path.basename(file), line=lineno, column=col,
                        candidate_line=cand_line, source_line=src.strip())
            rank = (0 if severity == "error" else 2 if severity == "warning" else 3) + (0 if own else 1)
        else:
            lm = LINK_RE.search(line)
            if lm:
                sym = lm["sym"] or lm["sym2"]
                diag = dict(severity="error", file="", line=None, column=None, candidate_line=None, source_line="",
                            message=f"undefined symbol {_demangle(sym)}: a function is declared but not defined "
                                    "(or defined with a different signature, or in a source not compiled)")
                rank = 0
        if diag is None:
            continue
        key = (diag["file"], diag["line"], diag["message"])
        if key in seen:
            continue
        seen.add(key)
        found.append((rank, order, diag))
    found.sort(key=lambda t: (t[0], t[1]))
    return [d for _, _, d in found[:limit]]

