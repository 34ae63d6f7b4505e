"""Tokens for BM25 and for choosing a snippet: API identifiers kept whole and also split.

`cublasLtMatmulDescSetAttribute` gives the token `cublasltmatmuldescsetattribute` (so an exact
name scores high) and its parts `cublas lt matmul desc set attribute` (so a partial name or a
question in words still meets it). A light plural stemmer folds `conflicts` onto `conflict`.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
IDENT_IN_QUERY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\.)[A-Za-z_][A-Za-z0-9_]*)*")

STOP = frozenset("""a an and are as at be been but by can could did do does doing for from had has have how i if in
into is it its me my no not of on or our should so than that the their them then there these this those to too
was we were what when where which while who why will with would you your yours about also any each just may
might must only other same some such very via vs use using used get""".split())


def _stem(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def tokens(text: str) -> list[str]:
    out: list[str] = []
    for m in _WORD.finditer(text):
        w = m.group(0)
        lw = w.lower()
        parts = [p.lower() for p in _PARTS.findall(w)]
        if lw not in STOP:
            out.append(_stem(lw) if len(parts) <= 1 else lw)
        if len(parts) > 1:
            out.extend(_stem(p) for p in parts if len(p) > 1 and p not in STOP)
    return out


def looks_like_identifier(word: str) -> bool:
    """An API-ish name (has _, ::, a digit, or an inner capital), not a plain English word."""
    core = word.strip("_")
    if not core:
        return False
    return ("_" in word or "::" in word or any(c.isdigit() for c in word)
            or any(c.isupper() for c in core[1:]))
