"""How a build of a candidate's extension ends short of a module: it failed (`BuildError`, with
the compiler output and its diagnostics) or it compiled but this machine cannot run it
(`NeedsGPU`)."""

from __future__ import annotations


class NeedsGPU(Exception):
    """A CUDA extension compiled, but this machine cannot run it (no CUDA device or CUDA torch);
    `diagnostics` holds what its compile-only check found (warnings, notes on what it could not check)."""

    def __init__(self, message: str, diagnostics: list[dict] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


class BuildError(Exception):
    """An extension failed to build; `text` holds the compiler output."""

    def __init__(self, message: str, text: str = "", diagnostics: list[dict] | None = None):
        super().__init__(message)
        self.text = text
        self.diagnostics = diagnostics or []
