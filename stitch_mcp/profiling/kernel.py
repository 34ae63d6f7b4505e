"""profile_kernel: an Nsight Compute digest of a candidate's kernels (issue 4)."""

from __future__ import annotations

from stitch_mcp.errors import UserError
from stitch_mcp.jobs import Progress
from stitch_mcp.models import KernelProfile


def profile_kernel(*, candidate: str | None = None, candidate_id: str | None = None, reference: str | None = None,
                   task_id: str | None = None, kernel_filter: str | None = None, launch_skip: int = 0,
                   launch_count: int = 5, sections: str = "quick",
                   progress: Progress | None = None) -> KernelProfile:
    raise UserError("not implemented yet: profile_kernel")
