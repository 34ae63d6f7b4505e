"""The Python API for scripts and RL reward functions: the same functions the MCP tools call,
returning the same pydantic models.

    from stitch_mcp import api
    report = api.check(reference="ref.py", candidate=source_text)
    reward = report.speedup_vs_eager if report.verdict == "pass" else 0.0

Each function runs synchronously (candidate code still runs in worker processes) and raises
`stitch_mcp.errors.UserError` for input the caller can fix.
"""

from __future__ import annotations

from stitch_mcp.check import compile_and_check as check
from stitch_mcp.config import configure
from stitch_mcp.errors import UserError
from stitch_mcp.evaluate import evaluate
from stitch_mcp.profiling.kernel import profile_kernel
from stitch_mcp.profiling.reference import profile_reference
from stitch_mcp.rubric import rubric_score as rubric
from stitch_mcp.search import search_cuda_docs as search

__all__ = ["check", "configure", "evaluate", "profile_kernel", "profile_reference", "rubric", "search", "UserError"]
