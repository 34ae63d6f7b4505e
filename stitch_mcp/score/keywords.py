"""What a piece of advice asks for: the technique keys a feedback item or a profile suggestion
names (keys_of), and whether an item asks to take something away (NEGATIVE). The engineering
dimension reads profile suggestions this way, skill compliance reads feedback items.
"""

from __future__ import annotations

import re

from stitch_mcp import analysis as an


# Feedback text -> what it asks for. "[key] ..." tags (as the loop writes them) win over keywords.
KEYWORDS = [
    ("vectorized_access", r"vectori[sz]|float4|int4|16[- ]byte|128[- ]bit|wide (load|store)"),
    ("grid_stride_loop", r"grid[- ]stride"),
    ("smem_tiling", r"\btil(e|es|ing)\b"),
    ("shared_memory", r"shared[- ]mem"),
    ("warp_primitives", r"warp[- ](shuffle|reduc|primitive|level)|__shfl|shuffle"),
    ("tensor_cores", r"tensor[- ]cores?|wmma|\bmma\b"),
    ("async_copy", r"cp\.async|memcpy_async|async(hronous)? cop|double[- ]buffer|\btma\b"),
    ("loop_unrolling", r"unroll"),
    ("launch_bounds", r"launch[_ ]bounds"),
    ("cache_hints", r"__ldg|__ldcs|__stcs|streaming (load|store)|read-only cache|cache hint"),
    ("fast_math", r"fast[- ]math|__expf|__fdividef"),
    ("cuda_graphs", r"cuda graphs?"),
    ("fusion", r"\bfus(e|ed|ion)\b"),
    ("cublaslt", r"cublaslt"), ("cublas", r"cublas"), ("cudnn", r"cudnn"), ("cutlass", r"cutlass|cute"),
    ("restrict", r"__restrict__"),
    ("cpu_simd", r"\bsimd\b|simd vector|avx|vectori[sz]ed? (the )?inner loop|at::vec"),
    ("cpu_threads", r"openmp|\bomp\b|parallel_for|multithread"),
    ("cpu_cache_blocking", r"cache[- ]block|loop til(e|ing)|blocking"),
    ("loop_fusion", r"loop fusion|fuse (the )?loops|one pass|single pass"),
    ("packed_half", r"half2|bf162|packed half"),
    ("current_stream", r"current (cuda )?stream|getcurrentcudastream"),
    ("no_fallback", r"fallback|pytorch|\btorch[.:]|\baten\b|at::"),
    ("launch_config", r"block size|threads per block|occupancy|grid size|launch config|register"),
]
# an item that asks to take something away starts with one of these verbs (after its [tag])
NEGATIVE = re.compile(r"^\s*(\[[\w:.-]+\]\s*)?(remove|avoid|drop|don't|do not|stop using|eliminate|get rid of|"
                      r"no longer use)\b", re.I)


KNOWN_TAGS = set(an.TECHNIQUE_LABELS) | {key for key, _ in KEYWORDS}


# "(cuBLAS/cuDNN calls are fine)", "(a plan cache is legitimate)": what an item permits is not what it asks for
_PERMITTED = re.compile(r"\([^()]*\b(fine|legitimate|allowed|ok(ay)?)\b[^()]*\)", re.I)


def keys_of(text: str) -> set[str]:
    """What a feedback item asks for: its [tag] when the analysis knows it, else keywords in its text."""
    m = re.match(r"\s*\[([\w:.-]+)\]\s*", text)
    if m:
        tag = m.group(1).split(":")[0]
        if tag in KNOWN_TAGS:
            return {tag}
        text = text[m.end():]
    low = _PERMITTED.sub(" ", text.lower())
    return {key for key, pat in KEYWORDS if re.search(pat, low)}
