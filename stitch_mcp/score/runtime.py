"""Where GPU time goes: the reference's by op, the candidate's by owner.

reference_shares: each canonical op's share of the reference's GPU time (profile_reference when
stored, else a static estimate). runtime_split: the kernels in the candidate's profile sorted into
its own, a library's it calls directly, and PyTorch/ATen's; the anti-hacking and coverage dimensions
read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stitch_mcp import analysis as an
from stitch_mcp.models import KernelProfile, ReferenceProfile, TaskRecord


_ATEN_KERNEL = re.compile(r"at::native|at_cuda_detail|\bat::|elementwise_kernel|reduce_kernel|cunn_|softmax_warp|"
                          r"vectorized_|unrolled_elementwise|index_elementwise|CatArrayBatched|distribution_|"
                          r"fill_kernel|copy_kernel|batch_norm|layer_norm|RowwiseMoments|GammaBeta|triton_",
                          re.I)
_LIB_KERNEL = re.compile(r"gemm|cutlass|cublas|xmma|cudnn|implicit_convolve|winograd|sm\d+_|ampere_|volta_|"
                         r"turing_|hopper_|nchwToNhwc|nhwcToNchw|splitKreduce|cub::", re.I)


def reference_shares(task: TaskRecord, ref_profile: ReferenceProfile | None) -> tuple[list[tuple[str, float]], str]:
    """(canonical op, share of the reference's GPU time), and where the numbers come from."""
    shares: dict[str, float] = {}
    for row in ref_profile.ops if ref_profile else []:
        op = an.canonical_op(row.name)
        if not op or op in an.GLUE:
            continue
        shares[op] = shares.get(op, 0.0) + row.share
    total = sum(shares.values())
    if shares and total > 0:
        return sorted(((k, v / total) for k, v in shares.items()), key=lambda x: -x[1]), "profile_reference"
    static = an.reference_ops(task.source)
    total = sum(w for _, w, _ in static) or 1.0
    return sorted(((op, w / total) for op, w, _ in static), key=lambda x: -x[1]), "static estimate"


@dataclass
class RuntimeSplit:
    """The candidate's profiled GPU time by owner: its own kernels, PyTorch/ATen's, a library's it calls
    (microseconds, or launches when the profile names its kernels without times)."""

    total: float
    custom: float
    pytorch: float
    library: float
    rows: list[tuple[str, float, str]]  # name, time, class
    launches: list[int]

    def share(self, part: float) -> float:
        return part / self.total if self.total > 0 else 0.0


def runtime_split(a: an.Analysis, kprof: KernelProfile | None,
                  ref_profile: ReferenceProfile | None) -> RuntimeSplit | None:
    """Which kernels ran in the candidate's profile and whose they are: its own, a library it calls
    directly, or PyTorch/ATen (including library kernels the reference launches and the candidate
    does not call directly). duration_us is taken per launch and multiplied by launches."""
    if kprof is None or kprof.status == "running" or not (kprof.kernels or kprof.other_kernels):
        return None
    ref_kernels = {k.name for k in ref_profile.kernels} if ref_profile else set()
    own = set(a.kernels)
    rows, launches = [], []
    for k in kprof.kernels:
        n = max(1, k.launches)
        rows.append((k.name, (k.duration_us or 0.0) * n, _kernel_class(k.name, own, ref_kernels, bool(a.libraries))))
        launches.append(n)
    for name in kprof.other_kernels:
        rows.append((name, 0.0, _kernel_class(name, own, ref_kernels, bool(a.libraries))))
        launches.append(1)
    total = sum(t for _, t, _ in rows)
    by = {c: sum(t for _, t, cc in rows if cc == c) for c in ("custom", "pytorch", "library")}
    if total == 0 and rows:  # names only: count launches
        total = float(len(rows))
        by = {c: float(sum(1 for _, _, cc in rows if cc == c)) for c in ("custom", "pytorch", "library")}
    return RuntimeSplit(total, by["custom"], by["pytorch"], by["library"], rows, launches)


def _kernel_class(name: str, own: set[str], ref_kernels: set[str], calls_library: bool) -> str:
    if any(k and k in name for k in own):
        return "custom"
    if _LIB_KERNEL.search(name) and not _ATEN_KERNEL.search(name):
        return "library" if calls_library else "pytorch"
    if _ATEN_KERNEL.search(name) or name in ref_kernels:
        return "pytorch"
    return "custom"
