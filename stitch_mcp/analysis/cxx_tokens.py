"""A small C/C++/CUDA tokenizer: comments vanish, string literals and preprocessor lines are single
tokens, every token keeps its 1-based line. Enough to read identifiers, calls, launches and
pragmas without mistaking the word "stream" in a comment for code."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class Tok:
    kind: str  # id, num, punct, str, pp
    value: str
    line: int


_PUNCT = ["<<<", ">>>", "::", "->", "+=", "-=", "*=", "/=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
          "++", "--"]
_RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^(\s]{0,16})\(')
_NUMBER = re.compile(r"[0-9a-fA-FxX.]+(?:[eEpP][+-]?\d+)?[uUlLfF]*")


def tokenize_cxx(text: str) -> list[Tok]:
    """C/C++/CUDA tokens with 1-based line numbers. Comments vanish; string and char literals are kept
    as single 'str' tokens (so code checks can skip them while asm() bodies stay inspectable);
    preprocessor lines are single 'pp' tokens."""
    toks: list[Tok] = []
    i, line, at_line_start = 0, 1, True
    while i < len(text):
        if text[i] == "\n":
            at_line_start = True
        end = _blank_end(text, i)
        if end > i:
            line, i = line + text.count("\n", i, end), end
        elif text[i] == "#" and at_line_start:
            tok, i, line = _directive(text, i, line)
            toks.append(tok)
        else:
            at_line_start = False
            tok, i, line = _token(text, i, line)
            toks.append(tok)
    return toks


def _blank_end(text: str, i: int) -> int:
    """The index after the white space, line continuation or comment at text[i]; i if there is none."""
    if text[i] in " \t\r\f\v\n":
        return i + 1
    if text.startswith("\\\n", i):
        return i + 2
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    return i


def _directive(text: str, i: int, line: int) -> tuple[Tok, int, int]:
    """The preprocessor line at text[i] as one 'pp' token (continuations joined, a // comment dropped),
    the index of the newline that ends it and the line that newline is on."""
    j, start, buf = i, line, []
    while j < len(text) and text[j] != "\n":
        if text.startswith("\\\n", j):
            j, line = j + 2, line + 1
            continue
        if text.startswith("//", j):
            j = text.find("\n", j)
            j = len(text) if j < 0 else j
            break
        buf.append(text[j])
        j += 1
    return Tok("pp", "".join(buf), start), j, line


def _token(text: str, i: int, line: int) -> tuple[Tok, int, int]:
    """The token at text[i] (a raw or plain string literal, identifier, number or punctuation), the
    index after it and the line it ends on."""
    c = text[i]
    raw = _RAW_STRING.match(text, i, i + 24)
    if raw:
        end = text.find(")" + raw.group(1) + '"', raw.end())
        end = len(text) if end < 0 else end + len(raw.group(1)) + 2
        return Tok("str", text[i:end], line), end, line + text.count("\n", i, end)
    if c in "\"'":
        j = i + 1
        while j < len(text) and text[j] != c and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return Tok("str", text[i:j + 1], line), j + 1, line
    if c.isalpha() or c == "_":
        j = i + 1
        while j < len(text) and (text[j].isalnum() or text[j] == "_"):
            j += 1
        return Tok("id", text[i:j], line), j, line
    if c.isdigit() or (c == "." and text[i + 1:i + 2].isdigit()):
        m = _NUMBER.match(text, i)
        j = m.end() if m else i + 1
        return Tok("num", text[i:j], line), j, line
    p = next((p for p in _PUNCT if text.startswith(p, i)), c)
    return Tok("punct", p, line), i + len(p), line


def with_macro_bodies(toks: list[Tok]) -> list[Tok]:
    """The tokens with each `#define`'s body tokenised after it (on the directive's line): kernels
    often wrap `asm volatile("cp.async ...")`, `mma.sync` or shuffles in macros."""
    out: list[Tok] = []
    for t in toks:
        out.append(t)
        if t.kind == "pp":
            m = re.match(r"\s*#\s*define\s+\w+(?:\([^)]*\))?(.*)", t.value, re.S)
            if m and m.group(1).strip():
                out.extend(Tok(x.kind, x.value, t.line) for x in tokenize_cxx(m.group(1)))
    return out


def skip_balanced(code: list[Tok], j: int, open_: str, close: str) -> int:
    """Index just past the bracket group that opens at code[j]."""
    depth = 0
    while j < len(code):
        if code[j].value == open_:
            depth += 1
        elif code[j].value == close or (close == ">" and code[j].value == ">>"):
            depth -= 2 if code[j].value == ">>" else 1
            if depth <= 0:
                return j + 1
        j += 1
    return j
