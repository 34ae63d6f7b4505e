"""The MCP side of rubric_score's second opinion: asking the client's model through MCP sampling.

score/client_judge.py builds the judge's prompt and merges its answer as plain text and models;
this module only turns them into a sampling request and reads the sampled reply, so no scoring code
imports the MCP SDK.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, Sample
from mcp.types import SamplingMessage, TextContent

from stitch_mcp.errors import UserError
from stitch_mcp.mcp_roots import ClientRoots, use_client_roots
from stitch_mcp.mcp_session import session_of


def judge_request(ctx: Context, judge: str = "none", candidate: str | None = None, candidate_id: str | None = None,
                  reference: str | None = None, task_id: str | None = None, feedback: list[str] | None = None,
                  roots: ClientRoots = None):
    """Resolver of rubric_score's `opinion`: a sampling request when judge='client' and the client can
    sample; otherwise a string saying why no second opinion is asked. Paths are read inside the
    client's roots, as the tool reads them."""
    from stitch_mcp.score.client_judge import JUDGE_SYSTEM, judge_prompt_for

    use_client_roots(roots)
    if judge != "client":
        return "not requested"
    caps = getattr(ctx, "client_capabilities", None)
    if caps is None or getattr(caps, "sampling", None) is None:
        return "the client does not support MCP sampling"
    try:
        prompt = judge_prompt_for(candidate, candidate_id, reference, task_id, feedback, session=session_of(ctx))
    except (UserError, OSError) as exc:
        return f"no second opinion: {exc}"
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                  max_tokens=1200, system_prompt=JUDGE_SYSTEM, temperature=0.0)


def sampled_text(opinion: Any) -> tuple[str | None, str | None]:
    """(the client's answer text, None) or (None, why there is none) from the resolved `opinion`."""
    if opinion is None or isinstance(opinion, str):
        return None, opinion or "the client did not answer"
    content = getattr(opinion, "content", None)
    if isinstance(content, list):
        return " ".join(getattr(c, "text", "") for c in content), None
    return getattr(content, "text", None) or "", None
