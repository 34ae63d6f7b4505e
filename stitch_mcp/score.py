"""rubric_score: StitchCUDA's four-dimension rubric (issue 5)."""

from __future__ import annotations

from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import RubricReport


def rubric_score(*, candidate: str | None = None, candidate_id: str | None = None, reference: str | None = None,
                 task_id: str | None = None, feedback: list[str] | None = None, judge: str = "none",
                 progress: Progress | None = None) -> RubricReport:
    raise UserError("not implemented yet: rubric_score")


async def client_judgement(ctx, result):
    raise UserError("not implemented yet: rubric_score(judge='client')")
