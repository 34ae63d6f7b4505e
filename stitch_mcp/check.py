"""compile_and_check: build, correctness, integrity and timing of a candidate (issue 3)."""

from __future__ import annotations

from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import CheckReport


def compile_and_check(*, candidate: str, reference: str | None = None, task_id: str | None = None,
                      trials: int | None = None, atol: float | None = None, rtol: float | None = None,
                      timing: bool = True, compare_compile: bool | None = None,
                      progress: Progress | None = None) -> CheckReport:
    raise UserError("not implemented yet: compile_and_check")
