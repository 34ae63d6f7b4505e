"""What a crashed stage's error text means: CUDA and host failures recognised by a substring.

Its own module so that the stages (build, run) and the worker's parent side can share it without
importing each other.
"""

from __future__ import annotations

CRASH_PATTERNS: list[tuple[str, str, str]] = [
    # (kind, substring in the error text (lowercase), explanation)
    ("illegal_memory_access", "illegal memory access", "a kernel read or wrote out of bounds "
     "(check index arithmetic and bounds guards; run compute-sanitizer)"),
    ("illegal_memory_access", "misaligned address", "a kernel used a misaligned vector or pointer access"),
    ("illegal_memory_access", "illegal instruction", "a kernel executed an illegal instruction"),
    ("launch_failure", "unspecified launch failure", "a kernel crashed (unspecified launch failure)"),
    ("launch_failure", "invalid configuration argument", "a kernel launch had an invalid grid/block "
     "configuration (too many threads per block, zero-sized grid, too much shared memory)"),
    ("launch_failure", "too many resources requested for launch", "a launch needs more registers or "
     "shared memory than the GPU has per block; use fewer threads or less shared memory"),
    ("device_assert", "device-side assert", "a device-side assert fired"),
    ("cuda_oom", "cuda out of memory", "the GPU ran out of memory"),
    ("cuda_oom", "outofmemoryerror", "the GPU ran out of memory"),
    ("host_oom", "memoryerror", "the host ran out of memory, or the room hit its memory cap (STITCH_ROOM_MEMORY_GB)"),
    ("host_oom", "can't allocate memory", "the host ran out of memory, or the room hit its memory cap "
                                          "(STITCH_ROOM_MEMORY_GB)"),
    ("host_oom", "std::bad_alloc", "the host ran out of memory, or the room hit its memory cap (std::bad_alloc)"),
]


def classify_error_text(text: str) -> tuple[str, str] | None:
    low = text.lower()
    for kind, needle, why in CRASH_PATTERNS:
        if needle in low:
            return kind, why
    return None
