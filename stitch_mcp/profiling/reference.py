"""profile_reference: where a reference program spends its GPU time (issue 4)."""

from __future__ import annotations

from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import ReferenceProfile


def profile_reference(*, reference: str | None = None, task_id: str | None = None, backend: str = "auto",
                      iterations: int = 5, progress: Progress | None = None) -> ReferenceProfile:
    raise UserError("not implemented yet: profile_reference")
