"""search_cuda_docs: offline hybrid retrieval over CUDA documentation (issue 6)."""

from __future__ import annotations

from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import SearchResults


def search_cuda_docs(*, query: str, k: int = 5, kinds: list[str] | None = None, include_text: bool = False,
                     progress: Progress | None = None) -> SearchResults:
    raise UserError("not implemented yet: search_cuda_docs")


def get_doc(doc_id: str) -> str:
    raise UserError("not implemented yet: stitch://docs")
