"""The order in which `stitch-mcp eval` starts its checks: the heaviest on GPU memory beside the
lightest.

A check holds its share of the card's memory from the judge's first allocation to its end
(stitch_mcp.gpu_memory), and KernelBench's level-1 tasks need most of an 80 GB card each, so those
checks run one after another whatever --jobs says. In name order they come together (19_ReLU,
20_LeakyReLU, ...): every job waits in the memory queue while no build runs, then the light tasks
build with the card idle. Alternating the heaviest with the lightest keeps the queue fed and the
other jobs building and judging beside it. The order changes when a check starts, never its
verdict.

What each check will need is estimated as the judge does (gpu_memory.estimate_need, on the meta
device: nothing allocated), in one child process with no GPU visible, for all references at once.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

log = logging.getLogger(__name__)

T = TypeVar("T")

# The child's time for all references: importing torch, then one import and meta-device forward each.
BASE_TIMEOUT_S = 60.0
PER_REFERENCE_S = 5.0


class MemoryNeeds(BaseModel):
    """What the child sends back: each reference's estimated bytes (None: not known, e.g. it does
    not run on the meta device; such a check takes the whole card)."""

    model_config = ConfigDict(extra="forbid")
    needs: dict[str, int | None]


def memory_needs(references: Sequence[Path]) -> dict[str, int | None]:
    """Estimated GPU bytes of a check of each reference, keyed by its path as given; {} where the
    estimate could not be made (the order is then left as it is)."""
    given = {str(Path(p).resolve()): str(p) for p in references}  # the child works in a folder of its own
    paths = list(given)
    if not paths:
        return {}
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # a reference that asks for the GPU at import is "not known"
    with tempfile.TemporaryDirectory(prefix="stitch-memory-order-", ignore_cleanup_errors=True) as work:
        try:
            done = subprocess.run([sys.executable, "-m", "stitch_mcp.memory_order"], input=json.dumps(paths),
                                  capture_output=True, text=True, cwd=work, env=env,
                                  timeout=BASE_TIMEOUT_S + PER_REFERENCE_S * len(paths))
            needs = MemoryNeeds.model_validate_json(done.stdout).needs
            return {given[p]: n for p, n in needs.items() if p in given}
        except (subprocess.TimeoutExpired, OSError, ValueError) as exc:
            log.warning("eval: the references' GPU memory could not be estimated (%s); checks start in name order",
                        type(exc).__name__)
            return {}


def heaviest_beside_lightest(items: Sequence[T], need: Callable[[T], int | None]) -> list[T]:
    """`items` ranked by need (None first: the whole card), then taken from both ends in turn:
    heaviest, lightest, second heaviest, second lightest... Equal needs keep their order."""
    ranked = sorted(items, key=lambda it: -(need(it) if need(it) is not None else float("inf")))
    order: list[T] = []
    lo, hi = 0, len(ranked) - 1
    while lo <= hi:
        order.append(ranked[lo])
        if lo != hi:
            order.append(ranked[hi])
        lo, hi = lo + 1, hi - 1
    return order


def _estimate(path: str, index: int, work: Path) -> int | None:
    import torch

    from stitch_mcp.gpu_memory import estimate_need
    from stitch_mcp.loader import import_program, init_inputs

    try:
        mod = import_program(Path(path).read_text(encoding="utf-8"), f"reference_{index}", work)
        return estimate_need(torch, mod, init_inputs(mod))
    except BaseException:  # any failure: not known (the check itself reports the reference's errors)
        return None


def main() -> None:
    paths = json.loads(sys.stdin.read())
    answer = os.dup(1)
    os.dup2(2, 1)  # what the references write to standard output, however they do, is not our answer
    sys.stdout = sys.stderr
    needs = {p: _estimate(p, i, Path.cwd()) for i, p in enumerate(paths)}
    with os.fdopen(answer, "wb") as out:  # the whole answer, however many writes it takes
        out.write(MemoryNeeds(needs=needs).model_dump_json().encode())
    os._exit(0)  # not waiting for threads a reference started


if __name__ == "__main__":
    main()
